#!/bin/sh
# memsim record --fake: safetensors' save_file (native code: it wrote
# the user's path without the recording's scratch folder, and stopped on
# a fake tensor's data) writes the file, with its header and zeros for
# the data, to the path's scratch copy (traces/memsim_record/host.py,
# Files), and load_file reads that copy back: tensors of the shapes and
# dtypes saved.  The working directory is left as it was.  Needs Python
# 3, PyTorch and safetensors; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c 'import safetensors' 2>/dev/null ||
	{ echo "no safetensors package: skipped"; exit 77; }
mkdir "$tmp/w"
(cd "$tmp/w" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" \
	"$SRC/recorder/safetensors_save.py") >"$tmp/err" 2>&1 ||
	fail "record: $(tail -3 "$tmp/err")"
grep -qx "loaded \[('0.bias', (256,), 'torch.float32'), ('0.weight', (256, 64), 'torch.float32'), ('2.bias', (8,), 'torch.float16'), ('2.weight', (8, 256), 'torch.float16')\]" "$tmp/err" ||
	fail "loaded: $(cat "$tmp/err")"
grep -qx "zeros True" "$tmp/err" || fail "zeros: $(cat "$tmp/err")"
grep -qx "tied \['0.bias', '0.weight', '1.bias'\]" "$tmp/err" ||
	fail "tied: $(cat "$tmp/err")"
[ -z "$(ls -A "$tmp/w")" ] || fail "the working directory written: $(ls -A "$tmp/w")"
finish recorder_safetensors.sh
