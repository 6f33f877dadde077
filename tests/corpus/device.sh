#!/bin/sh
# Every corpus program for real on a GPU machine (no memsim needed there):
# the same working directories, synthetic data and arguments as
# tests/corpus.sh, run by tests/corpus/run.sh in MODE real, where wrap.py
# writes torch.cuda.max_memory_allocated() and max_memory_reserved() at
# the program's end.  Writes OUTDIR/real.tsv (NAME, exit status, peak
# allocated, peak reserved, in bytes), OUTDIR/env.txt (torch, GPU, Python)
# and OUTDIR/logs.tar.gz (every program's output).
#   sh tests/corpus/device.sh OUTDIR [NAME...]
# CORPUS_JOBS programs run at once (default 4): each is its own process,
# and torch.cuda's peaks are counted per process.
set -u
o=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-python3}
export PY
mkdir -p "$o/runs"
o=$(cd "$o" && pwd)
"$PY" -c 'import torch, sys; print(torch.__version__, torch.cuda.get_device_name(0), sys.version.split()[0])' >"$o/env.txt" 2>&1
date -u >>"$o/env.txt"
if [ $# -eq 0 ]; then
	set -- $(grep -v '^#' "$here/programs.tsv" | cut -f1)
fi
for n in "$@"; do echo "$n"; done |
	xargs -P "${CORPUS_JOBS:-4}" -I{} sh "$here/run.sh" real "$o/runs" {}
printf 'name\trc\tallocated\treserved\n' >"$o/real.tsv"
for n in "$@"; do
	rc=$(cat "$o/runs/$n.rc" 2>/dev/null || echo none)
	peaks=$(cat "$o/runs/$n.real" 2>/dev/null || echo - -)
	printf '%s\t%s\t%s\t%s\n' "$n" "$rc" "${peaks% *}" "${peaks#* }" >>"$o/real.tsv"
done
(cd "$o/runs" && tar czf "$o/logs.tar.gz" ./*.log)
cat "$o/real.tsv"
