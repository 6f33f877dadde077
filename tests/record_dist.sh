#!/bin/sh
# One rank of a 2-GPU job: the committed --world-size 2 --fake traces
# (tests/data/dist/MODE.rR.fake.csv, memsim record with torch 2.13, CPU
# build, no GPU) against the real runs of the same script on two H200s
# (MODE.rR.real.bin, torchrun --nproc-per-node 2, torch 2.11, memsim record
# --gpu per rank; peaks.tsv holds each rank's torch.cuda.max_memory_*).
# No PyTorch needed.  validate/device/dist_device.sh made them.
set -u
DATA=${MSIM_TESTDATA:-tests/data}/dist
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
grep -v '^#' "$DATA/peaks.tsv" >"$tmp/peaks"
[ "$(wc -l <"$tmp/peaks")" -eq 8 ] || fail "peaks.tsv: 8 rows expected"
while IFS="	" read -r m r alloc res; do
	w=$m.r$r
	real_and_fake "$w" "$alloc" "$res" || continue
	case $w in
	zero.r1)
		# The real rank 1 kept DDP's first bucket (every gradient,
		# 33628200 bytes, 33628672 as round_size makes it) past the
		# bucket rebuild (docs/recording.md): the fake trace frees it there.
		[ $((fa + 33628672)) -eq "$alloc" ] ||
			fail "$w: fake $fa + the bucket != real $alloc"
		[ "$fr" -le "$res" ] || fail "$w: fake reserved $fr > $res";;
	fsdp.r1)
		# Same allocations as rank 0; the real run's frees after
		# record_stream completed later (GPU timing), so it reserved
		# more than rank 0 did.
		[ "$fa" -eq "$alloc" ] || fail "$w: fake allocated $fa != $alloc"
		[ "$fr" -le "$res" ] || fail "$w: fake reserved $fr > $res";;
	*)	[ "$fa" -eq "$alloc" ] || fail "$w: fake allocated $fa != $alloc"
		[ "$fr" -eq "$res" ] || fail "$w: fake reserved $fr != $res";;
	esac
done <"$tmp/peaks"
# FSDP and FSDP2 allocate on their own streams: the trace keeps them.
for m in fsdp fsdp2; do
	n=$(awk -F, 'NR > 1 && $3 == "alloc" { print $6 }' "$DATA/$m.r0.fake.csv" | sort -u | wc -l)
	[ "$n" -eq 3 ] || fail "$m: $n streams in the fake trace, expected 3"
done
finish record_dist.sh
