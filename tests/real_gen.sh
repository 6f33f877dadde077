#!/bin/sh
# Real recordings of generation and serving workloads
# (tests/data/real_gen/real.tsv: tests/recorder/gen_models.py on the H200: beam
# search, top-k/top-p sampling, a static KV cache that transformers
# compiles, BART generation, a diffusion sampling loop in fp16 inference
# mode, a serving loop with empty_cache() after each request, one
# torch.compile training step) reproduce exactly with `memsim run
# --recording`: peak allocated and reserved bytes, cudaMalloc and cudaFree
# counts, as the run's own torch.cuda.memory_stats() gave them.  The
# serving loop's empty_cache() calls are the trace's segment_free runs:
# replayed without --recording (as a --fake trace, which has none, is)
# the cached segments stay and it reserves more.
# Run by `make check` with MEMSIM and MSIM_TESTDATA.
set -u
DATA=${MSIM_TESTDATA:-tests/data}/real_gen
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
n=0
while IFS="$(printf '\t')" read -r trace alloc res sega segf; do
	case $trace in '#'*|trace) continue ;; esac
	n=$((n + 1))
	$MEMSIM run --recording --json "$DATA/$trace" >"$tmp/out.json" 2>"$tmp/err" || {
		fail "$trace: memsim run failed: $(cat "$tmp/err")"; continue; }
	o=$tmp/out.json
	got="$(key allocated_bytes.all.peak "$o") $(key reserved_bytes.all.peak "$o") $(key segment.all.allocated "$o") $(key segment.all.freed "$o")"
	[ "$got" = "$alloc $res $sega $segf" ] ||
		fail "$trace: memsim $got, real $alloc $res $sega $segf"
done <"$DATA/real.tsv"
[ "$n" -eq 7 ] || fail "$n recordings, not 7"
# Without --recording: the same peak allocated, 526385152 bytes reserved
# (+4.6%), no segment freed.
$MEMSIM run --json "$DATA/serve.real.msimtr" >"$tmp/out.json" || fail "serve plain run"
got="$(key allocated_bytes.all.peak "$tmp/out.json") $(key reserved_bytes.all.peak "$tmp/out.json") $(key segment.all.freed "$tmp/out.json")"
[ "$got" = "327534592 526385152 0" ] || fail "serve without --recording: $got"
finish real_gen.sh
