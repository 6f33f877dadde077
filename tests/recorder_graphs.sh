#!/bin/sh
# CUDA graphs and MemPools by hand under memsim record --fake (traces/
# memsim_record/graphs.py, docs/recording.md "Private pools"): a CPU
# build's dummy torch.cuda.CUDAGraph and MemPool raised at the first line.
# 1. The workloads whose real H200 `--gpu` recordings are in
#    tests/data/pools, recorded under --fake: the replay gives the real run's
#    figures (peaks, segments allocated and freed, the end state), and the
#    allocations, frees and pool rows are the real trace's, in its order
#    (pools.py, poolopts.py, graphreuse.py: the modes that apply).
# 2. A scenario by hand (tests/recorder/graphs_hand.py) with exact figures
#    and rows, values after a capture, make_graphed_callables.
# 3. A CUDA build's way (copies of PyTorch's classes on the bases).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
DATA=${MSIM_TESTDATA:-tests/data}/pools
KEYS="allocated_bytes.all.peak reserved_bytes.all.peak segment.all.allocated
segment.all.freed allocated_bytes.all.current reserved_bytes.all.current"
figures() { # TRACE [RUN OPTIONS] -> the replay's figures, one line
	t=$1; shift
	$MEMSIM run --json "$@" "$t" >"$tmp/p.json" || { echo "run failed"; return; }
	for k in $KEYS; do printf '%s ' "$(key "$k" "$tmp/p.json")"; done
}
rows() { # TRACE -> allocations, frees and pool rows: action size-or-pool/size
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$3 == "alloc" || $3 == "free_completed" { print $3, $5 }
		$3 ~ /^pool_/ { print $3, ("pool" in c && $c["pool"] != "" ? $c["pool"] : $4) "/" $5 }' "$1"
}
record() { # NAME MODULE CALL: record MODULE.CALL under --fake to $tmp/NAME.csv
	printf 'import sys\nsys.path.insert(0, "%s")\nimport %s\n%s.stats = lambda *a: None\n%s.%s\n' \
		"$SRC/recorder" "$2" "$2" "$2" "$3" >"$tmp/$1.py"
	$MEMSIM record -o "$tmp/$1.csv" -- "$PY" "$tmp/$1.py" 2>"$tmp/err" ||
		{ fail "record $1: $(tail -3 "$tmp/err")"; return 1; }
}

# graphreuse.py's own-allocator pools load MYALLOC_SO with ctypes
# (CUDAPluggableAllocator); under --fake its functions are never called,
# so a library with the two names serves (tests/recorder/myalloc.c needs
# CUDA's headers).
printf '#include <stddef.h>\nvoid *my_malloc(size_t n, int d, void *s) { (void)n; (void)d; (void)s; return NULL; }\nvoid my_free(void *p, size_t n, int d, void *s) { (void)p; (void)n; (void)d; (void)s; }\n' >"$tmp/myalloc.c"
${CC:-cc} -shared -fPIC -o "$tmp/myalloc.so" "$tmp/myalloc.c" ||
	fail "cannot build a shared library"
MYALLOC_SO=$tmp/myalloc.so
export MYALLOC_SO

# 1. name, script, call, the real trace, its figures' table, replay options
while read -r name mod call tsv opts; do
	record "$name" "$mod" "$call" || continue
	[ "$opts" = - ] && opts=
	# the table's figures: peaks, segments, end state (after the trace
	# name and, in poolopts.tsv and graphreuse.tsv, the options and the
	# contrast)
	want=$(awk -F "\t" -v t="$name.real.csv" -v f="$tsv" '$1 == t {
		i = (f == "real.tsv") ? 2 : 4
		print $i, $(i+1), $(i+2), $(i+3), $(i+4), $(i+5) }' "$DATA/$tsv")
	# shellcheck disable=SC2086
	got=$(figures "$tmp/$name.csv" $opts)
	[ "$(echo $got)" = "$want" ] || fail "$name: fake replays to '$got', the H200 run: '$want'"
	rows "$DATA/$name.real.csv" >"$tmp/real.rows"
	rows "$tmp/$name.csv" >"$tmp/fake.rows"
	if [ "$name" = mempool ] || [ "$name" = ownalloc_exp ]; then
		# recorded before --gpu marked ~MemPool's pool_release with
		# size 1 (tests/data/pools/graphreuse.tsv says so of
		# ownalloc_exp); both replay the same
		n=$(grep -n '^pool_release 1/0$' "$tmp/real.rows" | tail -1 | cut -d: -f1)
		sed -i "${n}s|/0\$|/1|" "$tmp/real.rows"
	fi
	cmp -s "$tmp/real.rows" "$tmp/fake.rows" ||
		fail "$name: rows differ: $(diff "$tmp/real.rows" "$tmp/fake.rows" | head -5 | tr '\n' ' ')"
done <<EOF
graph pools graph() real.tsv -
mempool pools mempool() real.tsv -
nosplit_on poolopts no_split(True) poolopts.tsv -
nosplit_off poolopts no_split(False) poolopts.tsv -
oom_on poolopts use_on_oom(True) poolopts.tsv --cap 104857600
delpool graphreuse delpool() graphreuse.tsv -
delown graphreuse delpool(True) graphreuse.tsv -
ownalloc graphreuse ownpool() graphreuse.tsv -
ownalloc_exp graphreuse ownpool() graphreuse.tsv --alloc-conf expandable_segments:True
EOF
# the capture's rows: the generator's seed and offset on the capture
# stream, then pool_begin there; g2 (sharing g's pool) none; released at
# the graphs' deaths, the seed and offset after the last
grep -q '^[0-9]*,[0-9]*,alloc,[0-9]*,8,\([0-9]*\),.*CUDAGraph seed$' "$tmp/graph.csv" ||
	fail "graph: no seed"
n=$(awk -F, '$3 == "pool_begin" && $6 != 0' "$tmp/graph.csv" | wc -l)
[ "$n" -eq 2 ] || fail "graph: $n pool_begin rows on a side stream"

# 2. By hand: x 1 MiB; the first capture: seed and offset (16 bytes, one
# 2 MiB segment on the capture stream), t and y1 (1 MiB each, the pool's
# 2 MiB segment), t freed; the second capture's y2 takes t's block; the
# replays allocate nothing; a no_split MemPool's 3 MiB takes a whole
# 20 MiB segment (allocated peak 1 + 20 MiB; reserved 2 + 2 + 2 + 20 MiB);
# empty_cache leaves x's segment.
$MEMSIM record -o "$tmp/hand.csv" -- "$PY" "$SRC/recorder/graphs_hand.py" \
	2>"$tmp/err" || fail "record hand: $(tail -3 "$tmp/err")"
got=$(figures "$tmp/hand.csv")
[ "$(echo $got)" = "22020096 27262976 4 3 1048576 2097152" ] ||
	fail "hand: replay figures $got"
got=$(awk -F, 'NR > 1 && $3 != "annotate" { printf "%s:%s:%s ", $3,
	($3 ~ /^pool_/ ? $4 "/" $5 : $5), ($6 == 0 ? 0 : "s") }' "$tmp/hand.csv")
want="alloc:1048576:0 empty_cache:0:0 alloc:8:s alloc:8:s pool_begin:1/0:s \
alloc:1048576:s alloc:1048576:s free_completed:1048576:s pool_end:1/0:0 \
empty_cache:0:0 pool_begin:1/0:s alloc:1048576:s pool_end:1/0:0 \
pool_release:1/0:0 pool_release:1/0:0 free_completed:8:s free_completed:8:s \
free_completed:1048576:s free_completed:1048576:s pool_create:2/4:0 \
pool_begin:2/0:0 alloc:3145728:0 pool_end:2/0:0 pool_release:2/0:0 \
free_completed:3145728:0 pool_release:2/1:0 empty_cache:0:0 "
[ "$got" = "$want" ] || fail "hand: rows
$got
want
$want"
# A capture runs no kernel and a replay rewrites what it wrote: the
# tensor of known value 3 added to in place is unknown after both (the
# --item-int assumption, 5 here), never 3 or 4.
$MEMSIM record --item-int 5 -o "$tmp/values.csv" -- "$PY" \
	"$SRC/recorder/graphs_hand.py" values 2>"$tmp/err" ||
	fail "record values: $(tail -3 "$tmp/err")"
grep -q '^after capture 5$' "$tmp/err" && grep -q '^after replay 5$' "$tmp/err" ||
	fail "values: $(grep after "$tmp/err" | tr '\n' ' ')"
# make_graphed_callables: forward and backward captured in one pool on a
# side stream (2 pool_begin rows, one pool), the steps after it replay:
# nothing allocated on that stream after the last pool_end.
$MEMSIM record -o "$tmp/graphed.csv" -- "$PY" "$SRC/recorder/graphs_hand.py" \
	graphed 2>"$tmp/err" || fail "record graphed: $(tail -3 "$tmp/err")"
[ "$(awk -F, '$3 == "pool_begin" { print $4, ($6 != 0) }' "$tmp/graphed.csv" | sort | uniq -c | sed 's/^ *//')" = "2 1 1" ] ||
	fail "graphed: pool_begin rows $(grep -c ',pool_begin,' "$tmp/graphed.csv")"
last=$(grep -n ',pool_end,' "$tmp/graphed.csv" | tail -1 | cut -d: -f1)
n=$(tail -n +"$last" "$tmp/graphed.csv" | awk -F, '$3 == "alloc" && $6 != 0' | wc -l)
[ "$n" -eq 0 ] || fail "graphed: $n allocations on the capture stream in the replays"
# One numbering of pools with torch.compile's cudagraph trees
# (compiled.py): the MemPool is pool 1, the tree's pool 2.
$MEMSIM record -o "$tmp/compiled.csv" -- "$PY" "$SRC/recorder/graphs_hand.py" \
	compiled 2>"$tmp/err" || fail "record compiled: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 ~ /^pool_/ { print $3 " " $4 }' "$tmp/compiled.csv" | sort -u | tr '\n' ';')
[ "$got" = "pool_begin 1;pool_begin 2;pool_create 1;pool_end 1;pool_end 2;pool_release 1;pool_release 2;" ] ||
	fail "compiled: pool rows $got"

# 3. A CUDA build's bases are C++ classes, which cannot be swapped: there
# torch.cuda's names get copies of PyTorch's classes on the recorder's
# bases (graphs._rebased), undone after.  Taken here on this build.
cat >"$tmp/forced.py" <<'EOF'
import torch
import torch.cuda.graphs as cg
import torch.cuda.memory as cm
from memsim_record import fake, graphs, known

orig = (torch.cuda.CUDAGraph, torch.cuda.MemPool, cg.CUDAGraph.__bases__)
rec = fake.Recorder(None)
kn = known.Known(torch)
graphs._FORCE_COPY = True
undo = graphs.install(torch, rec, kn)
try:
    G, M = torch.cuda.CUDAGraph, torch.cuda.MemPool
    assert G is not orig[0] and G is cg.CUDAGraph and M is cm.MemPool
    assert orig[0].__bases__ == orig[2]          # PyTorch's class untouched
    g = G()
    with fake._StreamContext(fake._Stream()):
        g.capture_begin()                        # PyTorch's, then the base's
        assert graphs.capturing()
        g.capture_end()
    assert g.pool() == (1, 0), g.pool()
    p = M(use_on_oom=True)
    assert p.id == (0, 1) and p.use_count() == 1
    del g, p
    acts = [(r[0], r[1], r[2]) for r in rec.rows]
    assert acts == [("alloc", acts[0][1], 8), ("alloc", acts[1][1], 8),
                    ("pool_begin", 1, 0), ("pool_end", 1, 0),
                    ("pool_create", 2, 2), ("pool_release", 1, 0),
                    ("free_completed", acts[0][1], 8),
                    ("free_completed", acts[1][1], 8),
                    ("pool_release", 2, 1)], acts
finally:
    undo()
    graphs._FORCE_COPY = False
assert (torch.cuda.CUDAGraph, torch.cuda.MemPool) == orig[:2]
EOF
PYTHONPATH=$SRC/../traces "$PY" "$tmp/forced.py" 2>"$tmp/err" ||
	fail "copies of PyTorch's classes: $(tail -3 "$tmp/err")"
finish recorder_graphs
