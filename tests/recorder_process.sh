#!/bin/sh
# memsim record --fake of a launcher that trains in a
# multiprocessing.Process of its own, as I-JEPA's main.py does
# (tests/recorder/process_rank.py; docs/recording-boundary.md):
# - the child would start without the recorder: nothing was recorded
#   ("never allocated GPU memory"); the target of the --rank-th such
#   start() now runs in the recording process, and the Process reads as
#   ended (exitcode 0, or its SystemExit's code);
# - the spawn start method, set for the whole program, reaches the
#   DataLoader's workers: the recorder's worker loop could not be pickled
#   for them ("Can't pickle local object");
# - DDP with static_graph or find_unused_parameters copies its used-
#   parameter map through a pinned host tensor and asserts it is pinned
#   ("local_used_map_tmp.is_pinned() INTERNAL ASSERT FAILED"): a factory's
#   pin_memory=True now makes a tensor that reads as pinned;
# - with static_graph the buckets are rebuilt a step later and the old
#   ones outlive the rebuild (the process group's last all-reduce holds
#   them): freed at the end of the next backward.
# The H200's lines (PyTorch 2.11): find_unused_parameters "allocated
# 72535040 peak 74723328", as recorded; static_graph "allocated 73629184
# peak 75817472": its old buckets (1094144 bytes) freed by the NCCL
# watchdog's clock, two steps later in that run, at once with a pause.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
P="$SRC/recorder/process_rank.py"
rec() {
	(cd "$tmp" && $MEMSIM record --fake -o "$tmp/$1.csv" -- "$PY" "$P" $2) \
		>"$tmp/$1.out" 2>&1
}
rec static "" || fail "static: $(tail -3 "$tmp/static.out")"
grep -qxF "allocated 72535040 peak 74805760" "$tmp/static.out" ||
	fail "static: $(grep -e allocated -e Error "$tmp/static.out")"
grep -qxF "exitcode 0 alive False" "$tmp/static.out" ||
	fail "static: no exit code: $(tail -3 "$tmp/static.out")"
rec unused unused || fail "unused: $(tail -3 "$tmp/unused.out")"
grep -qxF "allocated 72535040 peak 74723328" "$tmp/unused.out" ||
	fail "unused: $(grep -e allocated -e Error "$tmp/unused.out")"
grep -qxF "exitcode 3 alive False" "$tmp/unused.out" ||
	fail "unused: exit code: $(tail -3 "$tmp/unused.out")"
# A second process of the script's own: one rank is recorded
if rec two two; then
	fail "two processes recorded as one"
fi
grep -q "starts a 2nd process of its own (multiprocessing.Process, target train) beyond --world-size 1" \
	"$tmp/two.out" || fail "two: $(tail -3 "$tmp/two.out")"
[ -e "$tmp/two.csv" ] && fail "two: a trace written"
finish recorder_process
