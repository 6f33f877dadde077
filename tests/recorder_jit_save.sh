#!/bin/sh
# memsim record --fake: ScriptModule.save of a traced CUDA model (yolov7's
# detect.py, TracedModel: torch.jit.trace, then .save("traced_model.pt"))
# goes to the scratch copy of the path, as torch.save does: PyTorch's
# writer is native code (torch::jit::ExportModule), past the recorder's
# open(), and wrote into the user's folder (or, for yolov7's model, failed:
# "Attempted to set the storage of a tensor on device "cpu" to a storage on
# different device "meta"").  It copies each storage to the host
# (writeArchive's getWriteableTensorData): no GPU event.  A module of fake
# tensors gets a placeholder there, not an archive.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
mkdir "$tmp/run"
(cd "$tmp/run" && $MEMSIM record -o "$tmp/j.csv" -- "$PY" \
	"$SRC/recorder/jit_save.py") >"$tmp/err" 2>&1 ||
	fail "record: $(tail -3 "$tmp/err")"
grep -q '^(2, 4, 28, 28) True$' "$tmp/err" ||
	fail "the script printed: $(grep -v '^memsim record' "$tmp/err" | tail -3)"
[ -e "$tmp/run/traced.pt" ] && fail "traced.pt written into the user's folder"
grep -q 'wrote 1 file' "$tmp/err" || fail "no scratch write: $(tail -2 "$tmp/err")"
finish recorder_jit_save.sh
