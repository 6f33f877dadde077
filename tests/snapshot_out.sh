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
# Never over an input.
cp "$oom" "$tmp/in.pickle"
sum=$(cksum <"$tmp/in.pickle")
expect_error "is the input trace" $MEMSIM run --snapshot-out "$tmp/in.pickle" "$tmp/in.pickle"
[ "$(cksum <"$tmp/in.pickle")" = "$sum" ] || fail "the input was changed"
expect_error "one device at a time" $MEMSIM run --device all --snapshot-out "$tmp/x.pickle" "$oom"
expect_error "one input at a time" $MEMSIM run --snapshot-out "$tmp/x.pickle" "$oom" "$oom"
finish snapshot_out
