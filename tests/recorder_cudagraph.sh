#!/bin/sh
# memsim record --fake of CUDA graphs captured by hand (torch.cuda.CUDAGraph
# and the torch.cuda.graph context, tests/recorder/cuda_graph.py): a CPU
# build of PyTorch has only dummy classes ("Tried to instantiate dummy base
# class CUDAGraph"); fake.py's stand-in keeps what the allocator does with
# them.  The capture's allocation (64 x 256 floats) goes to the graph's
# private pool (pool_begin / pool_end on the capturing stream), the second
# graph shares the first one's pool, replays allocate nothing, and each
# graph's death releases the pool.  Needs Python 3 and PyTorch; skips (77)
# without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record -o "$tmp/g.csv" -- "$PY" "$SRC/recorder/cuda_graph.py" \
	2>"$tmp/err" || fail "record: $(grep -v '^ ' "$tmp/err" | tail -3)"
grep -q "^graphs (64, 256) (64, 256) True$" "$tmp/err" ||
	fail "graphs: $(grep -v '^memsim' "$tmp/err" | tail -3)"
# From the first pool row on: action, pool or size.
awk -F, '$3 ~ /^pool_/ { p = 1 } p && ($3 ~ /^pool_/ || $3 == "alloc") {
	printf "%s%s %s", s, $3, $4 ~ /^[0-9]+$/ && $3 != "alloc" ? $4 : $5; s = ", " }
	END { print "" }' "$tmp/g.csv" >"$tmp/got"
echo "pool_begin 2, alloc 65536, pool_end 2, pool_begin 2, alloc 65536, pool_end 2, pool_release 2, pool_release 2" >"$tmp/want"
cmp -s "$tmp/got" "$tmp/want" || fail "pool rows: $(cat "$tmp/got")"
$MEMSIM run "$tmp/g.csv" >/dev/null 2>"$tmp/run" || fail "run: $(cat "$tmp/run")"
finish recorder_cudagraph.sh
