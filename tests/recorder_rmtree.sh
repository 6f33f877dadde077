#!/bin/sh
# memsim record --fake: shutil.rmtree (Hugging Face Trainer's
# checkpoint rotation) removed the user's folder and files for real, past
# the recording's scratch folder.  Under the recording it removes the
# scratch copies of what the recording wrote there and hides the user's
# files and folders (traces/memsim_record/host.py, Files): gone for the
# rest of the recording, as in the real run, and left in place; a folder
# made again after it is there again.  Folders the script made itself (a
# tempfile.TemporaryDirectory, os.makedirs) are removed for real.  Needs Python 3 and PyTorch; skips
# (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
mkdir -p "$tmp/w/out/checkpoint-1/sub" "$tmp/w/out/checkpoint-2"
echo precious >"$tmp/w/out/checkpoint-1/model.pt"
echo deep >"$tmp/w/out/checkpoint-1/sub/state.json"
listing() { (cd "$tmp/w" && find . -print | LC_ALL=C sort && find . -type f -exec cksum {} + | LC_ALL=C sort); }
listing >"$tmp/before"
(cd "$tmp/w" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" \
	"$SRC/recorder/rmtree.py") >"$tmp/err" 2>&1 ||
	fail "record: $(tail -3 "$tmp/err")"
for want in "gone False False False" "again FileNotFoundError" "remade True 2" \
	"made False"; do
	grep -qx "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
t=$(sed -n 's/^tmp //p' "$tmp/err")
[ -n "$t" ] && [ ! -e "$t" ] || fail "the script's temporary folder left: $t"
[ ! -e "$tmp/w/made" ] || fail "the folder the script made left: $(find "$tmp/w/made")"
listing >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" ||
	fail "the user's folder changed: $(diff "$tmp/before" "$tmp/after")"

# os.rmdir and os.rename of folders: a user's empty folder is hidden (left
# in place), one with files in it ENOTEMPTY as for real, moving a user's
# folder refused (PermissionError: it moved for real before); a folder
# the script made moves for real, what the recording wrote in it with it.
mkdir -p "$tmp/v/userdir/sub" "$tmp/v/emptydir"
echo keep >"$tmp/v/userdir/a.txt"
(cd "$tmp/v" && find . -print | LC_ALL=C sort) >"$tmp/vbefore"
cat >"$tmp/rn.py" <<'PY'
import errno, os, torch
x = torch.zeros(4, device="cuda")
os.makedirs("made/inner")
with open("made/inner/f.txt", "w") as f:
    f.write("written")
os.rename("made", "made2")
print("read", open("made2/inner/f.txt").read())
os.rmdir("emptydir")
print("emptydir", os.path.isdir("emptydir"))
try:
    os.rmdir("userdir")
except OSError as e:
    print("rmdir", errno.errorcode[e.errno])
try:
    os.rename("userdir", "moved")
except PermissionError as e:
    print("rename refused")
os.mkdir("emptydir")
print("again", os.path.isdir("emptydir"))
PY
(cd "$tmp/v" && $MEMSIM record --fake -o "$tmp/rn.csv" -- "$PY" "$tmp/rn.py") \
	>"$tmp/err" 2>&1 || fail "rename/rmdir: $(tail -3 "$tmp/err")"
for want in "read written" "emptydir False" "rmdir ENOTEMPTY" \
	"rename refused" "again True"; do
	grep -qx "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
(cd "$tmp/v" && find . -print | grep -v '^./made2' | LC_ALL=C sort) >"$tmp/vafter"
cmp -s "$tmp/vbefore" "$tmp/vafter" ||
	fail "rename/rmdir changed the user's folders: $(diff "$tmp/vbefore" "$tmp/vafter")"
[ "$(cat "$tmp/v/userdir/a.txt")" = keep ] || fail "userdir/a.txt changed"
finish recorder_rmtree.sh
