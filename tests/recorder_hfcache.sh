#!/bin/sh
# memsim record --fake: a dataset already in the user's Hugging Face
# datasets cache (HF_DATASETS_CACHE) loaded by name with the hub offline
# (accelerate's examples: load_dataset("roneneldan/TinyStories")).  The
# recording's datasets cache, a folder of its scratch folder
# (traces/memsim_record/host.py, Files), starts with the user's cached
# files in it, so the load finds them as the real run does; what the
# script writes there (Dataset.map's cache file, a write to one of the
# user's cached files, its mode and times) stays in the scratch folder and the user's cache
# is unchanged.  Needs Python 3, PyTorch,
# pyarrow and the datasets package; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c 'import datasets' 2>/dev/null ||
	{ echo "no datasets package: skipped"; exit 77; }
"$PY" -c '
import sys, pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.table({"text": ["line %d" % i for i in range(7)]}), sys.argv[1])
' "$tmp/d.parquet" || fail "parquet"
mkdir "$tmp/cache"
HF_DATASETS_CACHE=$tmp/cache "$PY" "$SRC/recorder/hf_datasets_cached.py" \
	make "$tmp/d.parquet" >"$tmp/err" 2>&1 || fail "make: $(tail -3 "$tmp/err")"
listing() { (cd "$tmp/cache" && find . -print | LC_ALL=C sort && find . -type f -exec cksum {} + | LC_ALL=C sort && find . -type f -exec ls -l {} + | LC_ALL=C sort); }
listing >"$tmp/before"
HF_DATASETS_CACHE=$tmp/cache HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 \
	$MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" \
	"$SRC/recorder/hf_datasets_cached.py" load >"$tmp/err" 2>&1 ||
	fail "record: $(tail -3 "$tmp/err")"
for want in "rows 7 (7,)" "mode 0o600 0.0" "appended True" "written {}"; do
	grep -qx "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
listing >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" ||
	fail "the user's cache changed: $(diff "$tmp/before" "$tmp/after")"
finish recorder_hfcache.sh
