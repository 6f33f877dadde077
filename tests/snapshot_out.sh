#!/bin/sh
# memsim run --snapshot-out: the simulated run as a PyTorch snapshot, which
# memsim reads back to the same figures (its oom entry, its settings), and
# which never replaces an input.  tests/snapshot_out_torch.sh opens it with
# PyTorch's memory_viz.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
DATA=${MSIM_TESTDATA:-tests/data}
oom=$DATA/snapshots/r2_13_oom.pickle
$MEMSIM run --json --snapshot-out "$tmp/sim.pickle" "$oom" >"$tmp/a.json" ||
	fail "run --snapshot-out"
$MEMSIM run --json "$tmp/sim.pickle" >"$tmp/b.json" || fail "run of the output"
for k in reserved_bytes.all.peak reserved_bytes.all.current \
	allocated_bytes.all.peak allocated_bytes.all.current num_ooms \
	capacity_bytes; do
	[ -n "$(key "$k" "$tmp/a.json")" ] || fail "$k absent"
	[ "$(key "$k" "$tmp/a.json")" = "$(key "$k" "$tmp/b.json")" ] ||
		fail "$k: $(key "$k" "$tmp/a.json") simulated, $(key "$k" "$tmp/b.json") read back"
done
# 84 MiB reserved when the 100 MiB malloc failed again, as recorded.
[ "$(key reserved_bytes.all.peak "$tmp/b.json")" = 88080384 ] ||
	fail "the output's peak reserved"
grep -q '"params": "max_split_size_mb:64",' "$tmp/b.json" ||
	fail "the output lost the settings it ran with"
# Expandable segments: mapped pages as segments, read back alike.
exp=$DATA/snapshots/h200_expandable.pickle
$MEMSIM run --json --snapshot-out "$tmp/exp.pickle" "$exp" >"$tmp/c.json" ||
	fail "run --snapshot-out (expandable)"
$MEMSIM run --json "$tmp/exp.pickle" >"$tmp/d.json" || fail "read back (expandable)"
[ "$(key reserved_bytes.all.peak "$tmp/c.json")" = "$(key reserved_bytes.all.peak "$tmp/d.json")" ] ||
	fail "expandable: peak reserved read back differs"
# The state written is the one its trace leads to (memsim info's check of
# a snapshot), at the end or at the peak; at the peak it holds the peak.
for f in pickles/gpt2_fp32.pickle pickles/prefetch_2stream.pickle; do
	for at in end peak; do
		$MEMSIM run --json --snapshot-out "$tmp/o.pickle" --snapshot-at $at \
			"$DATA/$f" >"$tmp/o.json" || { fail "$f $at"; continue; }
		$MEMSIM info --json "$tmp/o.pickle" |
			grep -q '"snapshot_matches_trace": true' ||
			fail "$f --snapshot-at $at: the state is not its trace's"
		$MEMSIM run --json "$tmp/o.pickle" >"$tmp/r.json" ||
			fail "$f $at: read back"
		want=$(key reserved_bytes.all.current "$tmp/o.json")
		[ $at = peak ] && want=$(key reserved_bytes.all.peak "$tmp/o.json")
		[ "$(key reserved_bytes.all.current "$tmp/r.json")" = "$want" ] ||
			fail "$f --snapshot-at $at: reserved $(key reserved_bytes.all.current "$tmp/r.json"), expected $want"
	done
done
expect_error "--snapshot-at: 'middle' is not end or peak" \
	$MEMSIM run --snapshot-out "$tmp/x.pickle" --snapshot-at middle "$oom"
expect_error "--snapshot-at: needs --snapshot-out" $MEMSIM run --snapshot-at peak "$oom"
# Never over an input.
cp "$oom" "$tmp/in.pickle"
sum=$(cksum <"$tmp/in.pickle")
expect_error "is the input trace" $MEMSIM run --snapshot-out "$tmp/in.pickle" "$tmp/in.pickle"
[ "$(cksum <"$tmp/in.pickle")" = "$sum" ] || fail "the input was changed"
expect_error "one device at a time" $MEMSIM run --device all --snapshot-out "$tmp/x.pickle" "$oom"
expect_error "one input at a time" $MEMSIM run --snapshot-out "$tmp/x.pickle" "$oom" "$oom"
# --keep-going past an OOM: the refused alloc is the snapshot's oom entry
# and holds no block (it was written as an alloc at the last address, and
# the snapshot did not read back: "alloc at address ..., still live").
printf 'seq,time_us,action,addr,size,stream,category,site\n0,0,alloc,4096,104857600,0,,\n1,1,alloc,8192,104857600,0,,\n2,2,alloc,12288,104857600,0,,\n3,3,free_completed,4096,104857600,0,,\n4,4,alloc,16384,10485760,0,,\n' >"$tmp/k.csv"
$MEMSIM run --cap 250MiB --keep-going --snapshot-out "$tmp/k.pickle" \
	"$tmp/k.csv" >/dev/null || fail "--keep-going --snapshot-out"
$MEMSIM run --json "$tmp/k.pickle" >"$tmp/k.json" ||
	fail "the --keep-going snapshot does not read back"
[ "$(key allocated_bytes.all.current "$tmp/k.json")" = 115343360 ] ||
	fail "--keep-going snapshot: allocated $(key allocated_bytes.all.current "$tmp/k.json"), expected 115343360"
finish snapshot_out
