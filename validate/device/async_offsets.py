#!/usr/bin/env python3
"""Replays a memsim request file (validate/torch_replay.py's protocol:
a ID SIZE STREAM / x ID SIZE STREAM / f ID / e) through a placement rule
of the cudaMallocAsync pool and compares each block's offset with the
driver's, from a line of validate/device/async_replay.py's output (its "offs":
every successful block's address minus the lowest, in request order).
docs/cuda-async.md §3.1.

usage: async_offsets.py [--forced] RULE REPLAYS.jsonl[.gz] NAME REQS
       async_offsets.py [--forced] RULE --fuzz FUZZ.jsonl[.gz]
RULE: streams (§3.1 and §3.5, memsim's cuda-async), pending (§3.1
alone: no other stream's pending frees before a miss), bestfit (§2.1 alone),
recent-grow (the rule before it: recently freed ranges first, all made old
when the top grows), or recent (its variant: on a miss every range made
old and merged before the old ones are searched).
Prints: NAME RULE blocks, the first block placed differently (-1: none),
the blocks placed as the driver did, the model's peak of granules touched
(32 MiB, no trims) against the driver's reserved_high.  --forced puts
every block where the driver put it and asks the rule only for the next
one (matched then counts the rule's decisions that agree).  --fuzz reads
validate/device/async_probe_fuzz.py's or validate/device/async_probe_sync.py's
scenarios (one process per seed: streams rank by their first malloc in
the process) and prints, per number of streams and mode, the scenarios
whose every block the rule placed as the driver did, the blocks so placed
and the peaks equal to the driver's.  Synchronisations (§3.5):
cudaStreamSynchronize and cudaEventSynchronize complete their stream's
pending frees, cudaDeviceSynchronize (and e) every one; stream waits and
queries nothing.
Standard library only.
"""
import bisect
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import replayfile  # noqa: E402  (validate/replayfile.py)

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


class Pending:
    """§3.1: free ranges [start, size, pending, seq, stream] below the
    high-water mark, sorted by start; everything above hwm is the top.
    With others (§3.5), a request that neither its stream's pending ranges
    nor the old ones hold takes the best fit among another stream's
    pending ones, stream by stream in rank order (their first malloc),
    before a miss."""

    def __init__(self, others=False, rank=None):
        self.others = others
        self.rank = rank if rank is not None else {}
        self.free = []
        self.hwm = 0
        self.gran = {}
        self.peak = 0
        self.mapped = 0
        self.seq = 0

    def _touch(self, off, size, d):
        Pool._touch(self, off, size, d)

    def _mergeable(self, a, b):
        return (a[0] + a[1] == b[0] and a[2] == b[2] and
                (not a[2] or a[4] == b[4]))

    def retire(self, stream=None):
        """Every pending free (of stream, if given) completes: newest first
        into the old set (with others, stream by stream in rank order,
        §3.5); old neighbours merge, keeping the earlier seq."""
        order = ((lambda r: (self.rank.get(r[4], len(self.rank)), -r[3]))
                 if self.others else (lambda r: -r[3]))
        for r in sorted((r for r in self.free if r[2] and
                         (stream is None or r[4] == stream)), key=order):
            self.seq += 1
            r[2], r[3], r[4] = False, self.seq, 0
        out = []
        for r in self.free:
            if out and self._mergeable(out[-1], r):
                out[-1][1] += r[1]
                out[-1][3] = min(out[-1][3], r[3])
            else:
                out.append(r)
        self.free = out

    def _best(self, size, pending, stream):
        # an old range just below the top is part of the top
        top = (len(self.free) if not self.free or self.free[-1][2] or
               self.free[-1][0] + self.free[-1][1] != self.hwm
               else len(self.free) - 1)
        c = [r for r in self.free[:top] if r[1] >= size and r[2] == pending
             and (not pending or r[4] == stream)]
        return min(c, key=lambda r: (r[1], r[3], r[0]))[0] if c else None

    def _needs_map(self, off, size):
        """Whether a block there needs a granule mapped: with others, such
        a range counts as a miss (§3.5 e)."""
        new = sum(g not in self.gran for g in
                  range(off // GRANULE, (off + size - 1) // GRANULE + 1))
        return len(self.gran) + new > self.mapped

    def _other(self, size, stream):
        c = [r for r in self.free if r[1] >= size and r[2] and r[4] != stream]
        return (min(c, key=lambda r: (self.rank.get(r[4], len(self.rank)),
                                      r[1], r[3], r[0]))[0] if c else None)

    def choose(self, size, stream):
        """The offset for a block; completes the pending frees on a miss,
        as the driver does."""
        if stream not in self.rank:
            self.rank[stream] = len(self.rank)
        off = self._best(size, True, stream)
        if off is None:
            off = self._best(size, False, stream)
        if off is None and self.others:
            off = self._other(size, stream)
        if off is not None and not (self.others and self._needs_map(off, size)
                                    and any(r[2] for r in self.free)):
            return off
        self.retire()
        off = self._best(size, False, stream)
        if off is not None:
            return off
        if self.free and self.free[-1][0] + self.free[-1][1] == self.hwm:
            return self.free[-1][0]
        return self.hwm

    def take(self, off, size):
        """Carves [off, off + size) out of the free ranges it spans (and
        the top)."""
        end = off + size
        f = self.free
        i = bisect.bisect_right(f, [off, float("inf")]) - 1
        if i >= 0 and f[i][0] <= off < f[i][0] + f[i][1]:
            while (end > f[i][0] + f[i][1] and i + 1 < len(f) and
                   f[i + 1][0] == f[i][0] + f[i][1]):
                nxt = f[i + 1]
                n = min(end, nxt[0] + nxt[1]) - nxt[0]
                f[i][1] += n
                if n == nxt[1]:
                    del f[i + 1]
                else:
                    nxt[0] += n
                    nxt[1] -= n
                    break
            r = f[i]
            rend = r[0] + r[1]
            if end > rend:
                if rend != self.hwm:
                    raise ValueError("block at %d overlaps a live one" % off)
                self.hwm = rend = end
            pieces = []
            if off > r[0]:
                pieces.append([r[0], off - r[0]] + r[2:])
            if end < rend:
                self.seq += 1
                pieces.append([end, rend - end, r[2], self.seq, r[4]])
            f[i:i + 1] = pieces
        elif off >= self.hwm:
            if off > self.hwm:
                f.append([self.hwm, off - self.hwm, False, 0, 0])
            self.hwm = end
        else:
            raise ValueError("block at %d overlaps a live one" % off)
        self._touch(off, size, 1)
        if len(self.gran) > self.mapped:  # a granule mapped
            self.mapped = len(self.gran)
            self.retire()

    def alloc(self, size, stream=0):
        off = self.choose(size, stream)
        self.take(off, size)
        return off

    def release(self, off, size, time, stream=0):
        self._touch(off, size, -1)
        self.seq += 1
        r = [off, size, True, self.seq, stream]
        f = self.free
        i = bisect.bisect_left(f, r)
        f.insert(i, r)
        if i + 1 < len(f) and self._mergeable(f[i], f[i + 1]):
            f[i][1] += f[i + 1][1]
            del f[i + 1]
        if i > 0 and self._mergeable(f[i - 1], f[i]):
            f[i - 1][1] += f[i][1]
            f[i - 1][3] = f[i][3]
            del f[i]

    def trim(self):
        self.mapped = len(self.gran)


def replay(rule, ops, offs, forced, rank=None):
    """ops: [op, id, size, stream] with op a, x, f or e, or a
    synchronisation of async_probe_sync.py (ss, es, ds, we, q).  Returns
    blocks, first difference, matched, peak granules."""
    pending = rule in ("pending", "streams")
    pool = (Pending(rule == "streams", rank) if pending else Pool(rule))
    live = {}
    k = time = matched = 0
    first = -1
    for op in ops:
        if op[0] in ("a", "x"):
            size, st = rounded(op[2]), op[3]
            if pending:
                off = pool.choose(size, st)
            else:
                off = pool.alloc(size)
            time += 1
            if k < len(offs):
                if off == offs[k]:
                    matched += 1
                elif first < 0:
                    first = k
                if forced:
                    if not pending:
                        sys.exit("async_offsets.py: --forced needs pending "
                                 "or streams")
                    off = offs[k]
            if pending:
                pool.take(off, size)
            k += 1
            if op[0] == "a":
                live[op[1]] = (off, size, st)
            else:
                pool.release(off, size, time, st)
                time += 1
        elif op[0] == "f":
            off, size, st = live.pop(op[1])
            if len(op) > 3 and op[3] is not None:
                st = op[3]  # the stream it is freed on
            if pending:
                pool.release(off, size, time, st)
            else:
                pool.release(off, size, time)
            time += 1
        elif not pending:
            continue
        elif op[0] == "e":
            if rule == "streams":
                pool.retire()  # cudaDeviceSynchronize
            pool.trim()
        elif rule == "streams" and op[0] == "ds":
            pool.retire()
        elif rule == "streams" and op[0] in ("ss", "es"):
            pool.retire(op[1])
    return k, first, matched, pool.peak


def fuzz(rule, path, forced):
    opener = gzip.open if path.endswith(".gz") else open
    agg = {}
    ranks = {}  # a process's streams, by their first malloc
    with opener(path, "rt") as fp:
        for line in fp:
            d = json.loads(line)
            rank = ranks.setdefault((d["seed"], d["streams"], d["mode"]), {})
            k, first, matched, peak = replay(rule, d["ops"], d["offs"],
                                             forced, rank)
            a = agg.setdefault((d["streams"], d["mode"]), [0, 0, 0, 0, 0])
            a[0] += 1
            a[1] += first < 0
            a[2] += k
            a[3] += matched
            a[4] += peak * GRANULE == d["reserved_high"]
    for (streams, mode), a in sorted(agg.items()):
        print("%s streams %d %s scenarios %d all_placed %d blocks %d "
              "matched %d peaks_equal %d" % ((rule, streams, mode) +
                                             tuple(a)))


def main():
    args = sys.argv[1:]
    forced = bool(args) and args[0] == "--forced"
    if forced:
        args = args[1:]
    if len(args) == 3 and args[1] == "--fuzz":
        return fuzz(args[0], args[2], forced)
    if len(args) != 4:
        sys.exit(__doc__)
    rule, replays, name, reqs = args
    if rule not in ("streams", "pending", "bestfit", "recent",
                    "recent-grow"):
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
    try:
        ops = list(replayfile.requests(reqs))
    except ValueError as e:
        sys.exit("async_offsets.py: %s" % e)
    k, first, matched, peak = replay(rule, ops, real["offs"], forced)
    print("%s %s blocks %d first_difference %d matched %d peak %d "
          "reserved_high %d" % (name, rule, k, first, matched,
                                peak * GRANULE, real["reserved_high"]))


if __name__ == "__main__":
    main()
