#!/bin/sh
# memsim record --world-size N --rank R: one rank of a data-parallel job
# recorded with no GPU and no peers (needs PyTorch; skips, 77, without).
# tests/recorder/dist_train.py: 8 blocks of Linear(1024, 1024) and a
# Linear(1024, 10) head, AdamW, 3 steps.  The figures are PyTorch's rules
# (FSDP's padding, DDP's buckets), computed here from the model's shapes.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
script=${MSIM_TESTDATA:-tests/data}/../recorder/dist_train.py
# allocs SIZE FILE [SITE [CATEGORY]]: how many alloc rows of SIZE bytes
# (at SITE, of CATEGORY)
allocs() { awk -F, -v s="$1" -v site="${3:-}" -v cat="${4:-}" \
	'$3 == "alloc" && $5 == s && (site == "" || index($8, site)) &&
	(cat == "" || $7 == cat) { n++ } END { print n + 0 }' "$2"; }
N=3 R=2
for m in ddp zero fsdp fsdp2; do
	$MEMSIM record -o "$tmp/$m.csv" --world-size $N --rank $R -- "$PY" "$script" $m \
		2>"$tmp/$m.err" || fail "record $m: $(tail -3 "$tmp/$m.err")"
	$MEMSIM run "$tmp/$m.csv" >/dev/null || fail "memsim run $m"
done
D=1024 L=8 C=10
wnum=$((D * D)) bnum=$D hw=$((C * D)) hb=$C
# FSDP (FullyShardedDataParallel, one unit per block): each unit's flat
# parameter is padded to a multiple of N and this rank keeps 1/N of it
# (FlatParamHandle._get_shard: ceil(numel / N) elements), fp32: category
# parameter, as FSDP2's sharded parameters below (their local shards:
# fake.py, Recorder.relabel), not "other" at the line that wraps the
# model.
unit=$((wnum + bnum)) root=$((hw + hb))
sh_unit=$(( (unit + N - 1) / N * 4 )) sh_root=$(( (root + N - 1) / N * 4 ))
[ "$(allocs $sh_unit "$tmp/fsdp.csv" "" parameter)" -eq $L ] ||
	fail "fsdp: $L sharded flat parameters of $sh_unit bytes"
[ "$(allocs $sh_root "$tmp/fsdp.csv" "" parameter)" -eq 1 ] ||
	fail "fsdp: the root's sharded flat parameter of $sh_root bytes"
# Its unsharded flat parameters (N shards, padded) are all-gathered on a
# stream of their own (in forward; _init_flat_param_attributes makes and
# frees each once on the default stream), the reduce-scatter's
# output shards allocated on another one (in backward: gradient).
ag=$(awk -F, -v s=$((sh_unit * N)) '$3 == "alloc" && $5 == s && $7 == "activation" && $6 != 0 { print $6 }' "$tmp/fsdp.csv" | sort -u)
[ "$(echo "$ag" | grep -c .)" -eq 1 ] && [ "$ag" != 0 ] || fail "fsdp: all-gather stream(s): '$ag'"
rs=$(awk -F, -v s=$sh_unit '$3 == "alloc" && $5 == s && $7 == "gradient" { print $6 }' "$tmp/fsdp.csv" | sort -u)
[ "$(echo "$rs" | grep -c .)" -eq 1 ] && [ "$rs" != "$ag" ] && [ "$rs" != 0 ] ||
	fail "fsdp: reduce-scatter stream '$rs' (all-gather '$ag')"
# FSDP2 (fully_shard): each parameter is chunked on dim 0 and every shard
# padded to the first chunk's size (FSDPParam._init_sharded_param):
# ceil(rows / N) rows.
rows() { echo $(( ($1 + N - 1) / N )); }
w2=$(( $(rows $D) * D * 4 )) b2=$(( $(rows $D) * 4 ))
hw2=$(( $(rows $C) * D * 4 )) hb2=$(( $(rows $C) * 4 ))
[ "$(allocs $w2 "$tmp/fsdp2.csv" "" parameter)" -eq $L ] ||
	fail "fsdp2: $L padded weight shards of $w2 bytes"
[ "$(allocs $b2 "$tmp/fsdp2.csv" "" parameter)" -eq $L ] ||
	fail "fsdp2: $L padded bias shards of $b2 bytes"
[ "$(allocs $hw2 "$tmp/fsdp2.csv" "" parameter)" -eq 1 ] &&
	[ "$(allocs $hb2 "$tmp/fsdp2.csv" "" parameter)" -eq 1 ] ||
	fail "fsdp2: head shards of $hw2 and $hb2 bytes"
# AdamW's state is the shards' (the unpadded part of rank R's chunk:
# 1024 - 2 x 342 = 340 rows for rank 2 of 3): exp_avg and exp_avg_sq of
# each, in optimizer.step, and no state of a whole weight.
own=$(( D - R * $(rows $D) )); [ $own -gt $(rows $D) ] && own=$(rows $D)
[ "$(awk -F, -v s=$((own * D * 4)) '$3 == "alloc" && $5 == s && $7 == "optimizer"' "$tmp/fsdp2.csv" | wc -l)" -ge $((2 * L)) ] ||
	fail "fsdp2: optimizer state of the shards"
[ "$(awk -F, -v s=$((wnum * 4)) '$3 == "alloc" && $5 == s && $7 == "optimizer"' "$tmp/fsdp2.csv" | wc -l)" -eq 0 ] ||
	fail "fsdp2: optimizer state of whole weights"
# Streams: FSDP2 all-gathers and reduce-scatters on streams of its own.
[ "$(awk -F, 'NR > 1 && $3 == "alloc" { print $6 }' "$tmp/fsdp2.csv" | sort -u | wc -l)" -ge 3 ] ||
	fail "fsdp2: fewer than 3 streams"
# DDP: one bucket of every gradient at construction (bucket size limit
# sys.maxsize when find_unused_parameters is off), rebuilt before the
# second forward in the order gradients were ready: the head first, a
# first bucket closed at 1 MiB (head + last block), then buckets closed at
# bucket_cap_mb 25: the 7 other blocks.
total=$(( (L * (wnum + bnum) + hw + hb) * 4 ))
first=$(( (hw + hb + wnum + bnum) * 4 )) rest=$(( 7 * (wnum + bnum) * 4 ))
[ "$(allocs $total "$tmp/ddp.csv" dist_train.py:49)" -ge 1 ] || fail "ddp: bucket of $total bytes"
[ "$(allocs $first "$tmp/ddp.csv")" -eq 1 ] && [ "$(allocs $rest "$tmp/ddp.csv")" -eq 1 ] ||
	fail "ddp: rebuilt buckets of $first and $rest bytes"
# ... and the first bucket is freed in the trace.
a=$(awk -F, -v s=$total '$3 == "alloc" && $5 == s && $8 ~ /dist_train.py:49/ { a = $4 } END { print a }' "$tmp/ddp.csv")
grep -q ",free_completed,$a,$total," "$tmp/ddp.csv" || fail "ddp: first bucket not freed"
# ZeRO-1 (ZeroRedundancyOptimizer over DDP) keeps AdamW's state for its
# own partition of the parameters only: at most ceil(L / N) of the L
# weights, so its peak is below DDP's by at least two states (exp_avg,
# exp_avg_sq) of each of the other L - ceil(L / N) weights.
pk() { sed -n 's/.*peak live \([0-9]*\) bytes.*/\1/p' "$1"; }
d=$(pk "$tmp/ddp.err") z=$(pk "$tmp/zero.err")
[ -n "$d" ] && [ -n "$z" ] && [ $((d - z)) -ge $(( (L - (L + N - 1) / N) * 2 * wnum * 4 )) ] ||
	fail "zero peak $z vs ddp $d"
# Every rank records: rank 0 of the same job.
$MEMSIM record -o "$tmp/r0.csv" --world-size $N --rank 0 -- "$PY" "$script" fsdp2 2>"$tmp/err" ||
	fail "record fsdp2 rank 0: $(tail -3 "$tmp/err")"
# A rank outside the job is an error naming the option.
$MEMSIM record -o "$tmp/bad.csv" --world-size 2 --rank 2 -- "$PY" "$script" ddp 2>"$tmp/err" &&
	fail "--rank 2 of 2 accepted"
grep -q -- "--rank" "$tmp/err" || fail "--rank error: $(cat "$tmp/err")"
# DDP on one GPU without --world-size (tests/recorder/ddp_single.py): a
# process group of one rank the script starts itself, and its ranks from
# torch.multiprocessing.spawn over torch.cuda.device_count(), which runs
# rank 0 in the recorder's process (a spawned child would start without
# the recorder; "Distributed package doesn't have NCCL built in" and a
# dead child before).  The same rows either way; the spawned run's peaks
# are the H200's (torch 2.11, 2 December 2026: 169430528 allocated,
# 195035136 reserved).  A spawn of more processes than ranks asks for
# --world-size.
single=${MSIM_TESTDATA:-tests/data}/../recorder/ddp_single.py
for m in init spawn; do
	$MEMSIM record -o "$tmp/single-$m.csv" -- "$PY" "$single" $m \
		2>"$tmp/err" >/dev/null || fail "ddp_single $m: $(tail -3 "$tmp/err")"
done
cmp -s "$tmp/single-init.csv" "$tmp/single-spawn.csv" ||
	fail "ddp_single: init and spawn record differently"
$MEMSIM run --json "$tmp/single-spawn.csv" >"$tmp/single.json" || fail "run ddp_single"
[ "$(key allocated_bytes.all.peak "$tmp/single.json") $(key reserved_bytes.all.peak "$tmp/single.json")" = \
	"169430528 195035136" ] || fail "ddp_single spawn: $(grep -E 'bytes.all.peak' "$tmp/single.json")"
# Gradient accumulation whose first micro-step turns the reduction off
# (require_backward_grad_sync, as llm.c's train_gpt2.py does): the
# buckets are rebuilt only after the second micro-step's backward, which
# reduces, and the old bucket is freed then.  The H200 (torch 2.11,
# 3 December 2026): 169299456 allocated, 195035136 reserved; before, the
# recording rebuilt after the first backward and kept the old bucket:
# 186134528 / 209715200.
$MEMSIM record -o "$tmp/single-accum.csv" -- "$PY" "$single" accum \
	2>"$tmp/err" >/dev/null || fail "ddp_single accum: $(tail -3 "$tmp/err")"
$MEMSIM run --json "$tmp/single-accum.csv" >"$tmp/accum.json" || fail "run ddp_single accum"
[ "$(key allocated_bytes.all.peak "$tmp/accum.json") $(key reserved_bytes.all.peak "$tmp/accum.json")" = \
	"169299456 195035136" ] || fail "ddp_single accum: $(grep -E 'bytes.all.peak' "$tmp/accum.json")"
cat >"$tmp/spawn2.py" <<'PY'
import torch.multiprocessing as mp
def f(rank):
    pass
mp.spawn(f, nprocs=2)
PY
$MEMSIM record -o "$tmp/s2.csv" -- "$PY" "$tmp/spawn2.py" >/dev/null 2>"$tmp/err" &&
	fail "spawn of 2 without --world-size succeeded"
grep -q "starts 2 processes, one a rank: record with --world-size 2" "$tmp/err" ||
	fail "spawn of 2: $(cat "$tmp/err")"

# init_device_mesh before any init_process_group (PyTorch's
# tensor_parallel_example.py): the mesh's own default group is the fake
# one too (it waited for the other ranks, for ever); each rank holds a
# quarter of the column-wise Linear's 4096 x 1024 weight.
timeout 300 $MEMSIM record -o "$tmp/mesh.csv" --world-size 4 --rank 1 -- "$PY" "${MSIM_TESTDATA:-tests/data}/../recorder/mesh_first.py" >"$tmp/out" 2>&1 ||
	fail "record mesh first: $(tail -3 "$tmp/out")"
grep -q "^mesh 4 torch.Size(\[1024, 1024\])$" "$tmp/out" || fail "mesh first: $(cat "$tmp/out")"

finish recorder_dist.sh
