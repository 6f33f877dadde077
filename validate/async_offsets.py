#!/usr/bin/env python3
"""Replays a memsim request file (validate/torch_replay.py's protocol:
a ID SIZE STREAM / x ID SIZE STREAM / f ID / e) through a placement rule
of the cudaMallocAsync pool and compares each block's offset with the
driver's, from a line of validate/async_replay.py's output (its "offs":
every successful block's address minus the lowest, in request order).
docs/cuda-async.md §3 a.

usage: async_offsets.py RULE REPLAYS.jsonl[.gz] NAME REQS
RULE: bestfit (§2.1 alone), recent-grow (§3 a, memsim's cuda-async), or
recent (§3 a's second variant: on a miss every range made old and merged
before the old ones are searched).
Prints: NAME RULE blocks, the first block placed differently (-1: none),
the blocks placed as the driver did, the model's peak of granules touched
(32 MiB, no trims) against the driver's reserved_high.
Standard library only.
"""
import bisect
import gzip
import json
import sys

UNIT = 512
GRANULE = 32 << 20


def rounded(size):
    return max(UNIT, (size + UNIT - 1) // UNIT * UNIT)


class Pool:
    """Free ranges [start, size, recent, time] below the high-water mark,
    sorted by start; everything above hwm is the top."""

    def __init__(self, rule):
        self.rule = rule
        self.free = []
        self.hwm = 0
        self.gran = {}
        self.peak = 0

    def _touch(self, off, size, d):
        for g in range(off // GRANULE, (off + size - 1) // GRANULE + 1):
            self.gran[g] = self.gran.get(g, 0) + d
            if not self.gran[g]:
                del self.gran[g]
        self.peak = max(self.peak, len(self.gran))

    def _merge(self):
        out = []
        for r in self.free:
            if out and out[-1][0] + out[-1][1] == r[0] and out[-1][2] == r[2]:
                out[-1][1] += r[1]
                out[-1][3] = min(out[-1][3], r[3])
            else:
                out.append(r)
        self.free = out

    def _retire(self):
        for r in self.free:
            r[2] = False
        self._merge()

    def _best(self, size, recent_only):
        c = [r for r in self.free if r[1] >= size and (r[2] or not recent_only)]
        return min(c, key=lambda r: (r[1], r[3])) if c else None

    def alloc(self, size):
        if self.rule == "bestfit":
            pick = self._best(size, False)
        else:
            pick = self._best(size, True)
            if pick is None:
                if self.rule == "recent":
                    self._retire()
                pick = self._best(size, False)
        if pick is None:
            if self.free and self.free[-1][0] + self.free[-1][1] == self.hwm:
                off = self.free.pop()[0]
            else:
                off = self.hwm
            self.hwm = max(self.hwm, off + size)
            if self.rule == "recent-grow":
                self._retire()
        else:
            off = pick[0]
            if pick[1] == size:
                self.free.remove(pick)
            else:
                pick[0] += size
                pick[1] -= size
        self._touch(off, size, 1)
        return off

    def release(self, off, size, time):
        self._touch(off, size, -1)
        bisect.insort(self.free, [off, size, self.rule != "bestfit", time])
        self._merge()


def main():
    rule, replays, name, reqs = sys.argv[1:5]
    if rule not in ("bestfit", "recent", "recent-grow"):
        sys.exit("async_offsets.py: unknown rule %r" % rule)
    opener = gzip.open if replays.endswith(".gz") else open
    real = None
    with opener(replays, "rt") as fp:
        for line in fp:
            d = json.loads(line)
            if d.get("name") == name and "offs" in d:
                real = d
                break
    if real is None:
        sys.exit("async_offsets.py: %s: no line for %s with offsets"
                 % (replays, name))
    offs = real["offs"]
    pool = Pool(rule)
    live = {}
    k = time = matched = 0
    first = -1
    with open(reqs) as fp:
        for n, line in enumerate(fp, 1):
            op = line.split()
            if not op or op[0] == "e":
                continue
            if op[0] in ("a", "x"):
                size = rounded(int(op[2]))
                off = pool.alloc(size)
                time += 1
                if k < len(offs):
                    if off == offs[k]:
                        matched += 1
                    elif first < 0:
                        first = k
                k += 1
                if op[0] == "a":
                    live[op[1]] = (off, size)
                else:
                    pool.release(off, size, time)
                    time += 1
            elif op[0] == "f":
                if op[1] not in live:
                    sys.exit("async_offsets.py: %s:%d: free of unknown id %s"
                             % (reqs, n, op[1]))
                off, size = live.pop(op[1])
                pool.release(off, size, time)
                time += 1
    print("%s %s blocks %d first_difference %d matched %d peak %d "
          "reserved_high %d" % (name, rule, k, first, matched,
                                pool.peak * GRANULE, real["reserved_high"]))


if __name__ == "__main__":
    main()
