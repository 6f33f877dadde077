#!/bin/sh
# Real recordings of workloads no test had seen when they were made
# (tests/data/real_hf/real.tsv: Hugging Face and torchvision models from
# tests/recorder/hf_models.py, each under four PYTORCH_CUDA_ALLOC_CONF
# settings) reproduce exactly with `memsim run --recording` under the
# same setting: peak allocated and reserved bytes, cudaMalloc and cudaFree
# counts, as the run's own torch.cuda.memory_stats() gave them.
# Run by `make check` with MEMSIM and MSIM_TESTDATA.
set -u
# SET, SET_N: another set (tests/real_arch.sh): its folder, its count.
DATA=${MSIM_TESTDATA:-tests/data}/${SET:-real_hf}
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
grep -v '^#' "$DATA/real.tsv" | tail -n +2 | {
	fails=0 n=0
	while IFS="$(printf '\t')" read -r trace conf alloc res sega segf; do
		n=$((n + 1))
		[ "$conf" = - ] && conf=
		($MEMSIM run --recording ${conf:+--alloc-conf "$conf"} \
			--json "$DATA/$trace" 2>/dev/null >"$tmp/out.json") || {
			echo "FAIL: $trace: memsim run failed"
			fails=$((fails + 1)); continue; }
		o=$tmp/out.json
		got="$(key allocated_bytes.all.peak "$o") $(key reserved_bytes.all.peak "$o") $(key segment.all.allocated "$o") $(key segment.all.freed "$o")"
		if [ "$got" != "$alloc $res $sega $segf" ]; then
			echo "FAIL: $trace [$conf]: memsim $got, real $alloc $res $sega $segf"
			fails=$((fails + 1))
		fi
	done
	echo "$n recordings, $fails differ"
	[ "$n" -eq "${SET_N:-21}" ] && [ "$fails" -eq 0 ]
}
