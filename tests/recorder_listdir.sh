#!/bin/sh
# memsim record --fake: listings of folders the recording wrote in.  A
# script that saves checkpoints and then finds the latest with glob (or
# os.listdir, os.scandir, os.walk, pathlib) saw the folder as it was
# before the recording: the files it wrote went to the scratch folder
# and the ones it removed were still listed.  Now a listing shows what
# the real run would (traces/memsim_record/host.py, Files.listing); a
# folder the recording wrote in is not empty for os.rmdir; and the
# folders the script made are gone at the end, the user's tree as it
# was.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
mkdir -p "$tmp/w"
echo old >"$tmp/w/old.txt"
echo keep >"$tmp/w/keep.txt"
cat >"$tmp/ls.py" <<'PY'
import glob, os, pathlib, torch
x = torch.zeros(4, device="cuda")
os.makedirs("out/deep", exist_ok=True)
for i in range(3):
    torch.save({"x": x, "step": i}, "out/ckpt_%d.pt" % i)
os.remove("out/ckpt_0.pt")
os.remove("old.txt")
print("listdir", sorted(os.listdir("out")))
print("top", sorted(n for n in os.listdir(".") if n.endswith(".txt")))
print("glob", sorted(glob.glob("out/ckpt_*.pt")))
print("pathglob", sorted(p.name for p in pathlib.Path("out").glob("*.pt")))
print("iterdir", sorted(p.name for p in pathlib.Path("out").iterdir()))
with os.scandir("out") as it:
    print("scandir", sorted((e.name, e.is_file(), e.is_dir(),
                             e.stat().st_size > 0) for e in it))
print("walk", [(d, sorted(f)) for d, _, f in os.walk("out")])
print("bytes", sorted(os.listdir(b"out")))
print("load", torch.load(sorted(glob.glob("out/ckpt_*.pt"))[-1])["step"])
try:
    os.rmdir("out")
except OSError as e:
    print("rmdir", e.strerror)
PY
(cd "$tmp/w" && find . -print | LC_ALL=C sort) >"$tmp/before"
(cd "$tmp/w" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" "$tmp/ls.py") \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "listdir ['ckpt_1.pt', 'ckpt_2.pt', 'deep']" \
	"top ['keep.txt']" \
	"glob ['out/ckpt_1.pt', 'out/ckpt_2.pt']" \
	"pathglob ['ckpt_1.pt', 'ckpt_2.pt']" \
	"iterdir ['ckpt_1.pt', 'ckpt_2.pt', 'deep']" \
	"scandir [('ckpt_1.pt', True, False, True), ('ckpt_2.pt', True, False, True), ('deep', False, True, True)]" \
	"walk [('out', ['ckpt_1.pt', 'ckpt_2.pt']), ('out/deep', [])]" \
	"bytes [b'ckpt_1.pt', b'ckpt_2.pt', b'deep']" \
	"load 2" "rmdir Directory not empty"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
(cd "$tmp/w" && find . -print | LC_ALL=C sort) >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" ||
	fail "the user's folder changed: $(diff "$tmp/before" "$tmp/after")"
[ "$(cat "$tmp/w/old.txt")" = old ] || fail "old.txt changed"
finish recorder_listdir.sh
