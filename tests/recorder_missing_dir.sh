#!/bin/sh
# memsim record --fake: a write into a folder that does not exist went to
# the recording's scratch folder and succeeded, where the real run stops
# (a diffusion script's save_image(grid, "./contents/sample_0.png") with
# no contents/ folder: the real run ended with FileNotFoundError, the
# recording ran on to the next epoch).  Under the recording such a write
# fails as for real: open() with FileNotFoundError, torch.save with
# PyTorch's own "Parent directory ... does not exist." RuntimeError, a
# folder shutil.rmtree hid included (traces/memsim_record/host.py,
# Files.path); once the script makes the folder, the write goes to the
# scratch folder as before.  Needs Python 3 and PyTorch; skips (77)
# without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
mkdir -p "$tmp/w/old"
echo keep >"$tmp/w/old/a.txt"
cat >"$tmp/w/m.py" <<'PY'
import errno, os, shutil, torch
x = torch.randn(16, 1, 28, 28, device="cuda")   # samples on the GPU
try:
    with open("./contents/sample_0.png", "wb") as f:   # as PIL's save opens
        f.write(bytes(16))
    print("open wrote")
except FileNotFoundError as e:
    print("open", errno.errorcode[e.errno], e.filename)
try:
    torch.save(x, "contents/x.pt")
    print("save wrote")
except RuntimeError as e:
    print("save", e)
shutil.rmtree("old")
try:
    open("old/b.txt", "w")
    print("hidden wrote")
except FileNotFoundError as e:
    print("hidden", errno.errorcode[e.errno])
os.makedirs("contents")
with open("contents/sample_0.png", "wb") as f:
    f.write(bytes(16))
torch.save(x, "contents/x.pt")
print("made", os.path.getsize("contents/sample_0.png"),
      torch.load("contents/x.pt").shape == x.shape)
PY
(cd "$tmp/w" && $MEMSIM record --fake -o "$tmp/m.csv" -- "$PY" m.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "open ENOENT ./contents/sample_0.png" \
	"save Parent directory contents does not exist." "hidden ENOENT" \
	"made 16 True"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
[ ! -e "$tmp/w/old/b.txt" ] && [ "$(cat "$tmp/w/old/a.txt")" = keep ] ||
	fail "the user's folder changed: $(find "$tmp/w/old")"
[ ! -e "$tmp/w/contents/sample_0.png" ] && [ ! -e "$tmp/w/contents/x.pt" ] ||
	fail "a write reached the user's folder: $(find "$tmp/w/contents")"
finish recorder_missing_dir.sh
