#!/bin/sh
# `pip install SOURCE` (the source tree, or the tarball of `make dist`) in
# a fresh virtual environment, with no other step (issue 28): the memsim
# command prints the figures of the build tree's `memsim run --json`, the
# package loads the libmemsim inside it and replays a snapshot dict as
# its path, and `memsim record` runs the recorder installed beside it
# with the environment's Python.  Not part of make check (pip fetches
# setuptools and the build takes minutes); .ci/run runs it on both.
# Usage, from the build tree: sh tests/pip.sh SOURCE  (MEMSIM: this
# tree's memsim, ./memsim by default; TORCH_PYTHON: a Python with PyTorch).
set -u
[ $# -eq 1 ] || { echo "usage: sh tests/pip.sh SOURCE-TREE|TARBALL" >&2; exit 2; }
src=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
top=$(cd "$(dirname "$0")/.." && pwd)
MEMSIM=${MEMSIM:-./memsim}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memsim-pip-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset LD_LIBRARY_PATH MEMSIM_LIBRARY MEMSIM_PYTHONPATH MEMSIM_PYTHON PYTHONPATH
trace=$top/tests/data/traces/gpt2_varlen.csv
pickle=$top/tests/data/pickles/resnet50_amp.pickle

python3 -m venv "$tmp/venv" || { echo "FAIL: python3 -m venv"; exit 1; }
(cd "$tmp" && "$tmp/venv/bin/pip" install -q "$src") >"$tmp/log" 2>&1 ||
	{ tail -30 "$tmp/log"; echo "FAIL: pip install $src"; exit 1; }

"$MEMSIM" run --json "$trace" | grep -v '"wall_ms"' >"$tmp/want"
"$tmp/venv/bin/memsim" run --json "$trace" >"$tmp/got.json" ||
	fail "memsim run (pip's)"
grep -v '"wall_ms"' "$tmp/got.json" | cmp -s - "$tmp/want" ||
	fail "pip's memsim run --json differs from $MEMSIM's"

(cd "$tmp" && "$tmp/venv/bin/python" -B - "$pickle" "$tmp/venv") <<'PY' || fail "python"
import os, pickle, sys
import memsim
path, venv = sys.argv[1:]
lib = memsim._load()._name
assert lib.startswith(venv) and "_native" in lib, lib
with open(path, "rb") as f:
    snap = pickle.load(f)
a, b = memsim.run(path), memsim.run(snap)
assert all(a[k] == b[k] for k in a if k not in ("trace", "trace_hash", "wall_ms"))
assert memsim.explain(snap, cap="1GiB")["oom"]["message"].startswith("CUDA out of memory")
PY

# The recorder beside the package, run by the environment's Python: a
# script that prints its interpreter and the recorder's path instead of
# recording.  The recorder needs PyTorch: the venv borrows that of the
# Python configure found ($MEMSIM_PYTHON, make check's), through a .pth
# file, when it is the same version; else a stand-in interpreter shows
# the recorder's folder only.
torch_py=${TORCH_PYTHON:-}
ver() { "$1" -c 'import sys; print(sys.version_info[:2])'; }
if [ -n "$torch_py" ] && [ "$(ver "$torch_py")" = "$(ver "$tmp/venv/bin/python")" ] &&
	"$torch_py" -c 'import torch' 2>/dev/null; then
	site=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	"$torch_py" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' \
		>"$site/zz-torch.pth"
	printf 'import sys\nprint("py", sys.executable)\nprint("rec", sys.modules["memsim_record"].__file__)\n' \
		>"$tmp/who.py"
	(cd "$tmp" && "$tmp/venv/bin/memsim" record -o "$tmp/rec.csv" -- "$tmp/who.py") \
		>"$tmp/rec.out" 2>&1
	grep -q "^py $tmp/venv/bin/python" "$tmp/rec.out" ||
		fail "memsim record's Python: $(cat "$tmp/rec.out")"
else
	mkdir "$tmp/fake"
	printf '#!/bin/sh\necho "rec $PYTHONPATH"\nexit 3\n' >"$tmp/fake/python3"
	chmod +x "$tmp/fake/python3"
	"$tmp/venv/bin/memsim" record -o "$tmp/rec.csv" -- "$tmp/fake/python3" \
		who.py >"$tmp/rec.out" 2>&1
	echo "(no PyTorch of the venv's version: the recorder's folder only)"
fi
grep -q "^rec $tmp/venv/lib/python3[.0-9]*/site-packages" "$tmp/rec.out" ||
	fail "memsim record's recorder: $(cat "$tmp/rec.out")"

[ $fails -eq 0 ] && echo "pip: pip install $(basename "$src"): memsim, the package and the recorder work"
exit $((fails > 0))
