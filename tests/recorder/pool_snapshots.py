"""Snapshot pickles of private-pool programs (issue 15), for memsim's pickle
reader: python3 tests/recorder/pool_snapshots.py VARIANT OUT.pickle
The workloads are those of tests/recorder/pools.py (run through its at()
points); VARIANT picks where the history begins (start: before anything;
late: part way, with the peaks and counters reset there) and where the
snapshot is dumped (end of the workload, or live: while the graphs / the
MemPool still hold memory).
Prints memory_stats at the dump (the figures the replay must give)."""
import sys

import torch

import pools


def history():
    torch.cuda.memory._record_memory_history(
        enabled="all", context=None, stacks="python", max_entries=10**6)
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.reset_accumulated_memory_stats()


def dump(out):
    torch.cuda.synchronize()
    s = torch.cuda.memory_stats()
    print("stats %s\t%d\t%d\t%d\t%d\t%d\t%d" % (
        out, s["allocated_bytes.all.peak"], s["reserved_bytes.all.peak"],
        s["segment.all.allocated"], s["segment.all.freed"],
        s["allocated_bytes.all.current"], s["reserved_bytes.all.current"]),
        flush=True)
    torch.cuda.memory._dump_snapshot(out)
    torch.cuda.memory._record_memory_history(enabled=None)


def snapshot(out, late, live):
    """The at() of pools.py's workloads for one variant."""
    def at(point):
        if point == ("late" if late else "start"):
            history()
        elif point == "end":
            dump(out)
        return point == "live" and live
    return at


if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    w, _, how = name.partition("_")
    pools.WORKLOADS[w](snapshot(out, "late" in how, "live" in how))
