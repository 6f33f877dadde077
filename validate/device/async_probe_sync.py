#!/usr/bin/env python3
"""Several streams and synchronisations in the device's default
cudaMallocAsync pool as PyTorch sets it (CuPy; docs/cuda-async.md §3.5):
hand-made probes, each separating two readings of the rule, and random
small scenarios with synchronisations, scored offline by
validate/device/async_offsets.py --fuzz.  Standard library and CuPy only.

usage: async_probe_sync.py probes|probes2
       async_probe_sync.py fuzz SEED COUNT STREAMS MODE
MODE: plain (mallocs and frees), syncs (and, now and then, one of the
synchronisations below), xfree (a quarter of the frees on another stream
than the block's, as PyTorch's free_impl does for a block used on several
streams), dsfree (a cudaDeviceSynchronize after every free), big
(blocks of 1 to 256 MiB, now and then an empty_cache); with a
suffix -nb every stream is a created non-blocking one (otherwise stream 0
is the legacy default stream, as in PyTorch).
Ops: [a, id, size, stream] cudaMallocAsync; [f, id, size, stream]
cudaFreeAsync; [ss, s] cudaStreamSynchronize; [ds] cudaDeviceSynchronize;
[es, s] cudaEventRecord on s + cudaEventSynchronize; [we, s, t]
cudaEventRecord on s + cudaStreamWaitEvent(t); [q, s] cudaStreamQuery;
[e] cudaDeviceSynchronize + cudaMemPoolTrimTo(pool, 0) (PyTorch's
emptyCache); [t] cudaMemPoolTrimTo(pool, 0) alone.
fuzz prints one JSON line per scenario (seed, k, streams, mode, ops, offs:
each malloc's address minus the scenario's first, reserved_high); probes
prints "probe setup mode op args off_MiB" lines.  Each scenario and probe
starts from an empty pool trimmed to 0.
"""
import json
import random
import sys

KiB, MiB = 1 << 10, 1 << 20


class Pool:
    def __init__(self, nstreams, nb):
        import cupy
        self.rt = rt = cupy.cuda.runtime
        rt.setDevice(0)
        self.pool = rt.deviceGetDefaultMemPool(0)
        g = lambda n, v: getattr(rt, n, v)
        self.RH = g("cudaMemPoolAttrReservedMemHigh", 6)
        rt.memPoolSetAttribute(self.pool,
                               g("cudaMemPoolAttrReleaseThreshold", 4),
                               2**64 - 1)
        for n, v in (("cudaMemPoolReuseFollowEventDependencies", 1),
                     ("cudaMemPoolReuseAllowOpportunistic", 2),
                     ("cudaMemPoolReuseAllowInternalDependencies", 3)):
            rt.memPoolSetAttribute(self.pool, g(n, v), 1)
        self.streams = ([] if nb else [0]) + [
            rt.streamCreateWithFlags(1)
            for _ in range(nstreams - (0 if nb else 1))]
        self.ev = rt.eventCreateWithFlags(2)  # cudaEventDisableTiming

    def reset(self):
        rt = self.rt
        rt.deviceSynchronize()
        rt.memPoolTrimTo(self.pool, 0)
        rt.memPoolSetAttribute(self.pool, self.RH, 0)

    def run(self, ops):
        """Returns each malloc's offset from the first, and the live
        blocks are freed at the end."""
        rt, S = self.rt, self.streams
        live, offs, base = {}, [], None
        for op in ops:
            k = op[0]
            if k == "a":
                p = rt.mallocAsync(op[2], S[op[3]])
                base = p if base is None else base
                live[op[1]] = p
                offs.append(p - base)
            elif k == "f":
                rt.freeAsync(live.pop(op[1]), S[op[3]])
            elif k == "ss":
                rt.streamSynchronize(S[op[1]])
            elif k == "ds":
                rt.deviceSynchronize()
            elif k == "es":
                rt.eventRecord(self.ev, S[op[1]])
                rt.eventSynchronize(self.ev)
            elif k == "we":
                rt.eventRecord(self.ev, S[op[1]])
                rt.streamWaitEvent(S[op[2]], self.ev, 0)
            elif k == "q":
                rt.streamQuery(S[op[1]])
            elif k == "e":
                rt.deviceSynchronize()
                rt.memPoolTrimTo(self.pool, 0)
            elif k == "t":
                rt.memPoolTrimTo(self.pool, 0)
            else:
                raise ValueError("unknown op %r" % (k,))
        high = int(rt.memPoolGetAttribute(self.pool, self.RH))
        for p in live.values():
            rt.freeAsync(p, S[0])
        return offs, high


def scenario(rng, streams, mode):
    """40 to 80 ops of every scale the traces have (validate/
    async_probe_fuzz.py's mix), with the mode's additions."""
    pal = [rng.choice((512, 1536, 4 * KiB, 48 * KiB, 256 * KiB, 512 * KiB,
                       1 * MiB, 1536 * KiB, 2 * MiB, 3 * MiB, 4 * MiB,
                       6 * MiB, 8 * MiB, 12 * MiB, 20 * MiB, 40 * MiB))
           for _ in range(5)]
    top = 16 * MiB
    if mode == "big":  # granules mapped and remapped: blocks to 256 MiB
        pal = [rng.choice((1 * MiB, 4 * MiB, 12 * MiB, 24 * MiB, 40 * MiB,
                           64 * MiB, 100 * MiB, 160 * MiB, 256 * MiB))
               for _ in range(5)]
        top = 128 * MiB
    ops, live, nid = [], [], 0
    for _ in range(rng.randint(40, 80)):
        if mode == "big" and rng.random() < 0.04:
            ops.append(["e"])
        elif mode == "syncs" and rng.random() < 0.12:
            s, t = rng.randrange(streams), rng.randrange(streams)
            ops.append(rng.choice((["ss", s], ["ds"], ["es", s],
                                   ["we", s, t], ["q", s])))
        elif live and rng.random() < 0.45:
            i = rng.randrange(len(live)) if rng.random() < 0.6 else -1
            b = live.pop(i)
            s = b[2]
            if mode == "xfree" and streams > 1 and rng.random() < 0.25:
                s = (s + rng.randrange(1, streams)) % streams
            ops.append(["f", b[0], b[1], s])
            if mode == "dsfree":
                ops.append(["ds"])
        else:
            if rng.random() < 0.8:
                size = rng.choice(pal)
            else:
                size = rng.randint(1, top)
            s = rng.randrange(streams)
            ops.append(["a", nid, size, s])
            live.append((nid, size, s))
            nid += 1
    return ops


def fuzz(seed, count, nstreams, mode):
    base = mode[:-3] if mode.endswith("-nb") else mode
    if base not in ("plain", "syncs", "xfree", "dsfree", "big"):
        sys.exit("async_probe_sync.py: unknown mode %r" % mode)
    pool = Pool(nstreams, mode.endswith("-nb"))
    rng = random.Random(seed)
    for k in range(count):
        ops = scenario(rng, nstreams, base)
        pool.reset()
        offs, high = pool.run(ops)
        print(json.dumps({"seed": seed, "k": k, "streams": nstreams,
                          "mode": mode, "ops": ops, "offs": offs,
                          "reserved_high": high}))
    pool.rt.deviceSynchronize()


def M(x):
    return int(x * MiB)


def layout_x_o():
    """X (4 MiB, stream 1) pending on stream 1 and an old 8 MiB hole O:
    ids x, o; blocks s* separate them."""
    return [["a", "x", M(4), 1], ["a", "s1", M(1), 0], ["a", "o", M(8), 0],
            ["a", "s2", M(1), 0], ["f", "o", 0, 0],
            ["a", "big", M(64), 0],          # a miss: o turns old
            ["f", "x", 0, 1]]                # x pending on stream 1


def layout_p_o():
    """P (8 MiB) pending on stream 0 and an old 4 MiB hole O."""
    return [["a", "o", M(4), 0], ["a", "s1", M(1), 0], ["a", "p", M(8), 0],
            ["a", "s2", M(1), 0], ["f", "o", 0, 0],
            ["a", "big", M(64), 0],          # a miss: o turns old
            ["f", "p", 0, 0]]                # p pending on stream 0


SYNCS = {"none": [], "ss0": [["ss", 0]], "ss1": [["ss", 1]],
         "ds": [["ds"]], "es0": [["es", 0]], "es1": [["es", 1]],
         "we10": [["we", 1, 0]], "we01": [["we", 0, 1]],
         "q0": [["q", 0]], "q1": [["q", 1]], "e": [["e"]]}

# Each probe's last malloc separates the readings in its comment.
PROBES = {}
for sname, sops in SYNCS.items():
    # does the synchronisation complete stream 1's pending free? a 4 MiB
    # block on stream 0 takes x (0) if so, the old hole o (5) if not
    PROBES["other_" + sname] = layout_x_o() + sops + [["a", "t", M(4), 0]]
    # does it complete stream 0's own? a 4 MiB block takes the own
    # pending p (5) while pending (pending first), the exact old o (0)
    # once p is old
    PROBES["own_" + sname] = layout_p_o() + sops + [["a", "t", M(4), 0]]
PROBES.update({
    # which streams' frees does a miss complete: a miss on stream 0
    # (100 MiB) after x is freed on stream 1; then 4 MiB on stream 0:
    # x (0) if the miss completed x, o (5) if not
    "miss0_other": layout_x_o() + [["a", "m", M(100), 0],
                                   ["a", "t", M(4), 0]],
    # the same with the miss on stream 1
    "miss1_other": layout_x_o() + [["a", "m", M(100), 1],
                                   ["a", "t", M(4), 0]],
    # the miss on a third stream
    "miss2_other": layout_x_o() + [["a", "m", M(100), 2],
                                   ["a", "t", M(4), 0]],
    # a cross-stream free next to an old range: o1 (4, old) then x (4,
    # stream 1) freed, a miss, then 7 MiB on stream 0: at o1 (0) if x
    # merged with o1 on completion, at the top if not; then 4 MiB
    "merge_old_other": [["a", "o1", M(4), 0], ["a", "x", M(4), 1],
                        ["a", "s1", M(1), 0], ["f", "o1", 0, 0],
                        ["a", "big", M(64), 0], ["f", "x", 0, 1],
                        ["a", "m", M(100), 0], ["a", "t", M(7), 0],
                        ["a", "u", M(4), 0]],
    # the same with a synchronisation instead of the miss
    "merge_old_other_ds": [["a", "o1", M(4), 0], ["a", "x", M(4), 1],
                           ["a", "s1", M(1), 0], ["f", "o1", 0, 0],
                           ["a", "big", M(64), 0], ["f", "x", 0, 1],
                           ["ds"], ["a", "t", M(7), 0], ["a", "u", M(4), 0]],
    # own pending next to old, then a synchronisation: merged (7 MiB at
    # 0) or not (the top)
    "merge_old_own_ds": [["a", "o1", M(4), 0], ["a", "p", M(4), 0],
                         ["a", "s1", M(1), 0], ["f", "o1", 0, 0],
                         ["a", "big", M(64), 0], ["f", "p", 0, 0],
                         ["ds"], ["a", "t", M(7), 0]],
    # two streams' pending neighbours: x (stream 1) and y (stream 0)
    # adjacent, a miss: then 7 MiB on stream 0 at x (0) if they merged
    "merge_two_pending": [["a", "x", M(4), 1], ["a", "y", M(4), 0],
                          ["a", "s1", M(1), 0], ["f", "x", 0, 1],
                          ["f", "y", 0, 0], ["a", "m", M(100), 0],
                          ["a", "t", M(7), 0]],
    # does stream 1 see stream 0's pending free without a miss? x on
    # stream 0 pending, old hole o 8: 4 MiB on stream 1
    "other_rev": [["a", "x", M(4), 0], ["a", "s1", M(1), 0],
                  ["a", "o", M(8), 0], ["a", "s2", M(1), 0],
                  ["f", "o", 0, 0], ["a", "big", M(64), 0],
                  ["f", "x", 0, 0], ["a", "t", M(4), 1]],
    # the §3.3 a case: a block freed on stream 0 just below the top, a
    # miss on stream 1 (larger than it): at its start or above it
    "below_top_other": [["a", "s0", M(2), 0], ["a", "x", M(4), 0],
                        ["f", "x", 0, 0], ["a", "t", M(6), 1]],
    "below_top_own": [["a", "s0", M(2), 0], ["a", "x", M(4), 0],
                      ["f", "x", 0, 0], ["a", "t", M(6), 0]],
    "below_top_other_ds": [["a", "s0", M(2), 0], ["a", "x", M(4), 0],
                           ["f", "x", 0, 0], ["ds"], ["a", "t", M(6), 1]],
    # a block freed on stream 1 just below the top, a smaller own
    # pending below it on stream 0: a miss on stream 0
    "below_top_mixed": [["a", "s0", M(2), 0], ["a", "y", 0.5 * MiB, 0],
                        ["a", "s1", M(1), 0], ["a", "x", M(4), 1],
                        ["f", "y", 0, 0], ["f", "x", 0, 1],
                        ["a", "t", M(6), 0]],
    # a free on another stream than the block's (PyTorch's unifying
    # stream): allocated on 0, freed on 1, then 4 MiB on 0 with an old
    # 8 MiB hole: x (0) if it counts as stream 0's, o (5) if stream 1's
    "xfree": [["a", "x", M(4), 0], ["a", "s1", M(1), 0],
              ["a", "o", M(8), 0], ["a", "s2", M(1), 0],
              ["f", "o", 0, 0], ["a", "big", M(64), 0],
              ["f", "x", 0, 1], ["a", "t", M(4), 0]],
    "xfree_s1": [["a", "x", M(4), 0], ["a", "s1", M(1), 0],
                 ["a", "o", M(8), 0], ["a", "s2", M(1), 0],
                 ["f", "o", 0, 0], ["a", "big", M(64), 0],
                 ["f", "x", 0, 1], ["a", "t", M(4), 1]],
})


def map_layout(p_stream):
    """P (8 MiB) pending on p_stream just below an old 120 MiB range O
    whose granules 1 to 3 are unmapped (the trim), granule 4 held by k."""
    return [["a", "p", M(8), p_stream], ["a", "o", M(120), 0],
            ["a", "k", M(1), 0], ["f", "o", 0, 0], ["e"],
            ["f", "p", 0, p_stream]]


# Written before the run (docs/cuda-async.md §3.5 e): a range whose block
# would need a granule mapped counts as a miss.  Each comment gives the
# last block's offset predicted by §3.5 e (E) and by the rule before it,
# the mapping completing pending frees after the block is placed (B).
PROBES2 = {
    # 100 MiB at O needs granules mapped: P completes first and merges
    # with O, the block at P's start: E 0, B 8
    "map_first_own": map_layout(0) + [["a", "r", M(100), 0]],
    # the same with P pending on stream 1: E 0, B 8
    "map_first_other": map_layout(1) + [["a", "r", M(100), 0]],
    # 20 MiB at O needs only granule 0, mapped and free: no completion:
    # E 8, B 8
    "map_none_own": map_layout(0) + [["a", "r", M(20), 0]],
    # then a 1 MiB block: P still pending, own stream: E 0, B 0
    "map_none_then": map_layout(0) + [["a", "r", M(20), 0],
                                      ["a", "u", M(1), 0]],
    # does cudaMemPoolTrimTo alone complete pending frees? a 4 MiB block
    # after it takes the own pending 8 MiB range p (5) if not, the old
    # 4 MiB hole o (0) if so
    "own_trim": layout_p_o() + [["t"], ["a", "t", M(4), 0]],
    # and another stream's: x (0) if so, the old hole o (5) if not
    "other_trim": layout_x_o() + [["t"], ["a", "t", M(4), 0]],
}


def probes(table=None):
    table = PROBES if table is None else table
    for nb in (False, True):
        pool = Pool(3, nb)
        for name, ops in table.items():
            ops = [o if o[0] != "a" else [o[0], o[1], int(o[2]), o[3]]
                   for o in ops]
            pool.reset()
            offs, high = pool.run(ops)
            k = 0
            for o in ops:
                off = "-"
                if o[0] == "a":
                    off = "%.4f" % (offs[k] / MiB)
                    k += 1
                print(name, "nb" if nb else "legacy", " ".join(
                    str(x) for x in o), off, flush=True)
            print(name, "nb" if nb else "legacy", "reserved_high",
                  high // MiB, flush=True)
        pool.rt.deviceSynchronize()


if __name__ == "__main__":
    a = sys.argv[1:]
    if a == ["probes"]:
        probes()
    elif a == ["probes2"]:
        probes(PROBES2)
    elif len(a) == 5 and a[0] == "fuzz":
        fuzz(int(a[1]), int(a[2]), int(a[3]), a[4])
    else:
        sys.exit(__doc__)
