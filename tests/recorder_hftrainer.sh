#!/bin/sh
# memsim record --fake of a Hugging Face Trainer run (issue 25): fp16,
# gradient checkpointing, DataLoader workers, evaluation, checkpoints
# (safetensors' save_file, torch.save of the optimizer's state), their
# rotation (shutil.rmtree) and the best one loaded at the end.  It
# records; the checkpoint a previous run left in the output folder is
# still there, unchanged, though the recording's rotation removed it for
# the script (traces/memsim_record/host.py, Files).  Needs Python 3,
# PyTorch, transformers and accelerate; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c 'import transformers, accelerate' 2>/dev/null ||
	{ echo "no transformers or accelerate: skipped"; exit 77; }
mkdir -p "$tmp/w/out/checkpoint-1"
echo precious >"$tmp/w/out/checkpoint-1/model.safetensors"
(cd "$tmp/w" && HF_HUB_OFFLINE=1 $MEMSIM record --fake -o "$tmp/a.csv" -- \
	"$PY" "$SRC/recorder/hf_trainer.py") >"$tmp/err" 2>&1 ||
	fail "record: $(tail -3 "$tmp/err")"
for want in "cuda True 1" "steps 6" "old False"; do
	grep -qx "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
[ "$(cat "$tmp/w/out/checkpoint-1/model.safetensors" 2>&1)" = precious ] ||
	fail "the previous run's checkpoint changed or removed"
# only folders (made for real by os.makedirs) added, no file
[ "$(cd "$tmp/w" && find . -type f)" = ./out/checkpoint-1/model.safetensors ] ||
	fail "files written: $(cd "$tmp/w" && find . -type f)"
finish recorder_hftrainer.sh
