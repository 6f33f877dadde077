#!/bin/sh
# memsim record --fake: Hugging Face datasets' load_dataset (minimind's
# PretrainDataset).  Its cache (HF_DATASETS_CACHE: Arrow files written
# through Python's open, which the recording sends to its scratch
# folder, then read back by pyarrow's native memory_map, and filelock's
# lock files) goes to a folder of the recording's scratch folder
# (traces/memsim_record/host.py, Files): the load works, and the user's
# cache folder is not written.  Needs Python 3, PyTorch and the datasets
# package; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c 'import datasets' 2>/dev/null ||
	{ echo "no datasets package: skipped"; exit 77; }
for i in 1 2 3 4 5; do echo "{\"text\": \"line $i\"}"; done >"$tmp/d.jsonl"
mkdir "$tmp/cache"
HF_DATASETS_CACHE=$tmp/cache HF_DATASETS_OFFLINE=1 \
	$MEMSIM record -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/hf_datasets.py" \
	"$tmp/d.jsonl" >"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
grep -q "^rows 5 (5,)$" "$tmp/err" || fail "rows: $(cat "$tmp/err")"
[ -z "$(ls -A "$tmp/cache")" ] || fail "the user's cache written: $(ls -A "$tmp/cache")"
finish recorder_hfdatasets.sh
