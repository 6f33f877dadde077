#!/bin/sh
# memsim record --fake: a file in a folder the script made during the
# recording, made there by what the recording does not redirect
# (os.symlink, native code), is the script's own: removing it
# (os.unlink/os.remove, pathlib's unlink) removes it for real, as rmtree
# and rename of such a folder act for real.  It was taken for a user's
# file and only hidden, so OLMo's trainer, which points a "latest" link
# at each checkpoint it saves (unlink(missing_ok=True), then
# symlink_to), failed at its second save with FileExistsError
# (traces/memsim_record/host.py, Files.install's remover).  A user's own
# file is still hidden and left in place.  Needs Python 3 and PyTorch;
# skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
mkdir -p "$tmp/w"
echo keep >"$tmp/w/user.txt"
ln -s user.txt "$tmp/w/userlink"
cat >"$tmp/link.py" <<'PY'
import os, pathlib, torch
x = torch.zeros(4, device="cuda")
save = pathlib.Path("workspace")
save.mkdir(parents=True)
for step in (0, 4, 8):
    d = save / ("step%d" % step)
    d.mkdir()
    torch.save({"x": x}, d / "model.pt")
    latest = save / "latest"
    latest.unlink(missing_ok=True)
    latest.symlink_to(d.name, target_is_directory=True)
    print("latest", os.readlink(latest))
os.remove("user.txt")
os.unlink("userlink")
print("user", os.path.exists("user.txt"), os.path.lexists("userlink"))
PY
(cd "$tmp/w" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" "$tmp/link.py") \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "latest step0" "latest step4" "latest step8" "user False False"; do
	grep -qx "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
[ "$(cat "$tmp/w/user.txt")" = keep ] || fail "the user's file changed"
[ -L "$tmp/w/userlink" ] || fail "the user's link removed"
finish recorder_unlink_made.sh
