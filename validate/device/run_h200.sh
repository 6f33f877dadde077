#!/bin/sh
# Validation on a GPU machine: every trace of tests/data replayed on the
# real GPU, through PyTorch's allocator under every setting of
# tests/data/expected.tsv (torch mode), and as raw cudaMalloc and as a
# cudaMallocAsync pool; plus a latency calibration.  Everything measured
# goes into one results database; `memsim report --compare` then sets
# simulations beside it (no GPU needed for that part).
#
#   MEMSIM=path/to/memsim OUT=dir validate/device/run_h200.sh
#
# memsim must be built with --with-cuda; python3 must have PyTorch.
set -u
MEMSIM=${MEMSIM:-./memsim}
OUT=${OUT:-validate-out}
JOBS=${JOBS:-4}
DATA=${MSIM_TESTDATA:-tests/data}
mkdir -p "$OUT"
db=$OUT/measured.db
log=$OUT/validate.log
: >"$log"
export MEMSIM_DB_BUSY_MS=60000

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >>"$log" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' >>"$log" 2>&1

echo "calibration" >&2
"$MEMSIM" validate --calibrate "$OUT/cuda_latency_measured.csv" >>"$log" 2>&1 ||
	echo "calibration failed" >&2

# torch mode: one fresh process per (trace, setting), as expected.tsv was
# measured; several at once (each process has its own address space).
jobs=$OUT/jobs
rm -rf "$jobs"
mkdir -p "$jobs"
n=0
add_job() { # WORKLOAD ALLOC_CONF CAP
	n=$((n + 1))
	{
		printf 'exec "%s" validate --mode torch --db "%s"' "$MEMSIM" "$db"
		[ -n "$2" ] && printf " --alloc-conf '%s'" "$2"
		[ "$3" != 0 ] && printf ' --cap %s' "$3"
		printf ' "%s/traces/%s.csv" >/dev/null 2>>"%s.log"\n' "$DATA" "$1" "$jobs/$n"
	} >"$jobs/$n.sh"
}
tail -n +2 "$DATA/expected.tsv" >"$OUT/rows.tsv"
while IFS='	' read -r w cfg conf cap rest; do
	[ "$conf" = - ] && conf=
	add_job "$w" "$conf" "$cap"
done <"$OUT/rows.tsv"
add_job prefetch_2stream "" 0
add_job train_eval_emptycache "" 0
echo "torch mode: $n replays, $JOBS at a time" >&2
ls "$jobs"/*.sh | xargs -P "$JOBS" -n 1 sh
cat "$jobs"/*.log >>"$log" 2>/dev/null

echo "raw and async modes" >&2
for f in "$DATA"/traces/*.csv; do
	for mode in raw async; do
		"$MEMSIM" validate --mode "$mode" --db "$db" "$f" >>"$log" 2>&1 ||
			echo "FAILED $mode $f" | tee -a "$log" >&2
	done
done
python3 - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for row in db.execute("SELECT policy, count(*), sum(oom_request >= 0) FROM runs GROUP BY policy"):
    print("measured", *row)
PY
