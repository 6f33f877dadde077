#!/usr/bin/env python3
"""Writes the small snapshots and RMM logs of tests/data/snapshots and the
figures memsim must find in them (expected.tsv).

Each snapshot is one of a few hand-made allocator histories, laid out as
the PyTorch release named in its file name writes
torch.cuda.memory._dump_snapshot() (pickle.dump of the dict that
torch.cuda.memory._snapshot() returns):

  2.0    blocks without 'address' (they tile their segment), with 'history';
         trace entries without 'time_us'
  2.1    blocks with 'requested_size' and 'frames' but still no 'address';
         segments with 'segment_pool_id' and 'is_expandable'; 'time_us'
  2.2-5  blocks with 'address'
  2.6+   trace entries with 'compile_context'
  2.8+   trace entries with 'user_metadata'; 'allocator_settings' and
         'external_annotations' after the trace

The expected figures follow from the histories by PyTorch's rules
(round_size, the 20 MiB segments of 1-10 MiB requests, 2 MiB small
segments), not from running memsim.  Standard library only:
    python3 tests/data/snapshots/make_corpus.py tests/data/snapshots
"""
import os
import pickle
import sys

MiB = 1 << 20
L = 0x7F0000000000        # a large segment of 20 MiB
S = 0x7F0002000000        # a small segment of 2 MiB
A, B = L, L + 4 * MiB     # 4 MiB and 2 MiB blocks in it
C, D = S, S + 512         # 400 B (a 512 B block) and 1 KiB
RESERVED = 20 * MiB + 2 * MiB
ALLOCATED = 2 * MiB + 1024  # B and D live at the end

FULL = [  # (action, addr, size): the whole history
    ("segment_alloc", L, 20 * MiB),
    ("alloc", A, 4 * MiB),
    ("alloc", B, 2 * MiB),
    ("segment_alloc", S, 2 * MiB),
    ("alloc", C, 400),
    ("alloc", D, 1024),
    ("free_requested", A, 4 * MiB),
    ("free_completed", A, 4 * MiB),
    ("free_requested", C, 400),
    ("free_completed", C, 400),
]
# The history started after A, B and C were allocated.
LATE = FULL[5:]
# A ring buffer of 6 entries: the first four were overwritten... except
# the small segment's allocation, kept: the buffer held the last 7.
WRAPPED = FULL[3:]


def frames(i, n=2):
    return [{"filename": "train.py", "line": 10 + i, "name": "step"}] + [
        {"filename": "model.py", "line": 100 + k, "name": "layer%d" % k}
        for k in range(n - 1)]


def blocks_end(release, dev=0, base_l=L, base_s=S):
    """The end state: [large segment, small segment]."""
    def blk(addr, size, req, state, seg_addr):
        b = {}
        if release != "2.0" and release != "2.1":
            b["address"] = addr
        b["size"] = size
        if release != "2.0":
            b["requested_size"] = req
        else:
            b["requested_size"] = req  # 2.0's Python snapshot had it
        b["state"] = state
        if release == "2.0":
            b["history"] = ([{"addr": addr, "real_size": req,
                              "frames": frames(1)}]
                            if state != "inactive" else [])
        else:
            b["frames"] = frames(2) if state != "inactive" else []
        return b

    def seg(addr, total, alloc, large, blocks):
        g = {"device": dev, "address": addr, "total_size": total,
             "allocated_size": alloc, "active_size": alloc,
             "requested_size": alloc, "stream": 0,
             "segment_type": "large" if large else "small"}
        if release != "2.0":
            g["segment_pool_id"] = (0, 0)
            g["is_expandable"] = False
            g["frames"] = []
        g["blocks"] = blocks
        return g

    dl, ds = base_l - L, base_s - S
    return [
        seg(base_l, 20 * MiB, 2 * MiB, True, [
            blk(A + dl, 4 * MiB, 4 * MiB, "inactive", base_l),
            blk(B + dl, 2 * MiB, 2 * MiB, "active_allocated", base_l),
            blk(B + dl + 2 * MiB, 14 * MiB, 14 * MiB, "inactive", base_l)]),
        seg(base_s, 2 * MiB, 1024, False, [
            blk(C + ds, 512, 400, "inactive", base_s),
            blk(D + ds, 1024, 1024, "active_allocated", base_s),
            blk(D + ds + 1024, 2 * MiB - 1536, 0, "inactive", base_s)]),
    ]


def entries(rows, release, t0=1700000000000000, shift=(0, 0)):
    out = []
    for i, (action, addr, size) in enumerate(rows):
        if addr >= S:
            addr += shift[1]
        elif addr >= L:
            addr += shift[0]
        e = {"action": action}
        e["device_free" if action == "oom" else "addr"] = addr
        e["size"] = size
        e["stream"] = 0
        if release != "2.0":
            e["time_us"] = t0 + 10 * i
        e["frames"] = frames(i)
        if release in ("2.6", "2.8", "2.11"):
            e["compile_context"] = "N/A"
        if release in ("2.8", "2.11"):
            e["user_metadata"] = ""
        out.append(e)
    return out


SETTINGS_DEFAULT = {
    "PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
    "garbage_collection_threshold": 0.0, "expandable_segments": False,
    "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
    "pinned_use_cuda_host_register": False,
    "roundup_power2_divisions": {str(1 << k): 0 for k in range(16)},
}


def snapshot(release, rows, segments=None, settings=None, devices=None):
    s = {"segments": blocks_end(release) if segments is None else segments,
         "device_traces": devices if devices is not None
         else [entries(rows, release)]}
    if release in ("2.8", "2.11"):
        s["allocator_settings"] = dict(SETTINGS_DEFAULT, **(settings or {}))
        s["external_annotations"] = [
            {"stage": "START", "name": "step", "device": 0,
             "time_us": 1700000000000000}]
    return s


def write(out, name, obj, protocol=4):
    with open(os.path.join(out, name), "wb") as f:
        pickle.dump(obj, f, protocol=protocol)


def main(out):
    exp = []  # (file, command and options, json key, value)

    def full_figures(name, opts=""):
        exp.append((name, "info" + opts, "snapshot_matches_trace", "true"))
        exp.append((name, "info" + opts, "snapshot_reserved_bytes",
                    RESERVED))
        exp.append((name, "info" + opts, "peak_live_bytes",
                    4 * MiB + 2 * MiB + 400 + 1024))
        exp.append((name, "info" + opts, "seed_requests", 0))
        exp.append((name, "run --recording" + opts, "snapshot_state",
                    '"matches (2 segments, %d bytes reserved, %d allocated, '
                    'same blocks)"' % (RESERVED, ALLOCATED)))
        exp.append((name, "run --recording" + opts,
                    "reserved_bytes.all.peak", RESERVED))
        exp.append((name, "run --recording" + opts,
                    "allocated_bytes.all.peak",
                    4 * MiB + 2 * MiB + 512 + 1024))

    for rel, proto in (("2.0", 4), ("2.1", 4), ("2.3", 4), ("2.6", 4),
                       ("2.8", 4), ("2.11", 5)):
        name = "r%s_full.pickle" % rel.replace(".", "_")
        write(out, name, snapshot(rel, FULL), proto)
        full_figures(name)
    exp.append(("r2_0_full.pickle", "info", "duration_known", "false"))
    exp.append(("r2_8_full.pickle", "info", "allocator_settings", '""'))
    # Python 3.0-3.7 pickled with protocol 3, Python 2 with 2.
    write(out, "r2_3_proto2.pickle", snapshot("2.3", FULL), 2)
    full_figures("r2_3_proto2.pickle")

    # Settings: the string the process was given, or the fields alone
    # (torch.cuda.memory._set_allocator_settings()).
    write(out, "r2_8_conf.pickle", snapshot("2.8", FULL, settings={
        "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64",
        "max_split_size": 64 * MiB}))
    exp.append(("r2_8_conf.pickle", "info", "allocator_settings",
                '"max_split_size_mb:64"'))
    exp.append(("r2_8_conf.pickle", "run --recording", "params",
                '"max_split_size_mb:64"'))
    write(out, "r2_11_setfields.pickle", snapshot("2.11", FULL, settings={
        "max_split_size": 128 * MiB, "garbage_collection_threshold": 0.5}))
    exp.append(("r2_11_setfields.pickle", "info", "allocator_settings",
                '"max_split_size_mb:128,garbage_collection_threshold:0.5"'))

    # Partial histories.
    for rel in ("2.0", "2.3", "2.11"):
        name = "r%s_late.pickle" % rel.replace(".", "_")
        write(out, name, snapshot(rel, LATE))
        for cmd in ("info", "run --recording"):
            exp.append((name, cmd, "seeded_from_frees", 2))     # A, C
            exp.append((name, cmd, "seeded_from_snapshot", 1))  # B
            exp.append((name, cmd, "seeded_segments", 2))
            exp.append((name, cmd, "seeded_segment_bytes", RESERVED))
            # The large segment's tail, and the small one's 2 MiB - 512 B
            # in blocks of at most 1 MiB.
            exp.append((name, cmd, "seed_fillers", 3))
            exp.append((name, cmd, "seed_exact", "true"))
            exp.append((name, cmd, "explained_live_blocks", 1))  # D
        exp.append((name, "info", "snapshot_matches_trace", "true"))
        exp.append((name, "run --recording", "snapshot_state",
                    '"matches (2 segments, %d bytes reserved, %d allocated, '
                    'same blocks)"' % (RESERVED, ALLOCATED)))
        exp.append((name, "run --recording", "reserved_bytes.all.peak",
                    RESERVED))
        # Peaks from the start of the history: A, B, C, then D.
        exp.append((name, "run --recording", "allocated_bytes.all.peak",
                    4 * MiB + 2 * MiB + 512 + 1024))
        exp.append((name, "info --strict", "error",
                    "free_requested of unknown address"))
    write(out, "r2_6_wrapped.pickle", snapshot("2.6", WRAPPED))
    for cmd in ("info", "run --recording"):
        exp.append(("r2_6_wrapped.pickle", cmd, "seeded_from_frees", 1))
        exp.append(("r2_6_wrapped.pickle", cmd, "seeded_from_snapshot", 1))
        exp.append(("r2_6_wrapped.pickle", cmd, "seeded_segments", 1))
        exp.append(("r2_6_wrapped.pickle", cmd, "seeded_segment_bytes",
                    20 * MiB))
        exp.append(("r2_6_wrapped.pickle", cmd, "seed_fillers", 1))
    exp.append(("r2_6_wrapped.pickle", "run --recording", "snapshot_state",
                '"matches (2 segments, %d bytes reserved, %d allocated, '
                'same blocks)"' % (RESERVED, ALLOCATED)))
    exp.append(("r2_6_wrapped.pickle", "run --recording",
                "reserved_bytes.all.peak", RESERVED))
    # The history lost the large segment's allocation and its blocks, then
    # saw empty_cache() free it: a segment_free of a segment it never saw.
    rows = [("free_requested", B, 2 * MiB), ("free_completed", B, 2 * MiB),
            ("segment_free", L, 20 * MiB)]
    segs = blocks_end("2.3")[1:]
    segs[0]["blocks"][0]["state"] = "active_allocated"
    segs[0]["allocated_size"] = segs[0]["active_size"] = 1536
    write(out, "r2_3_segfree.pickle", snapshot("2.3", rows, segments=segs))
    for cmd in ("info", "run --recording"):
        exp.append(("r2_3_segfree.pickle", cmd, "seeded_from_frees", 1))
        exp.append(("r2_3_segfree.pickle", cmd, "seeded_from_snapshot", 2))
        exp.append(("r2_3_segfree.pickle", cmd, "seeded_segments", 2))
        exp.append(("r2_3_segfree.pickle", cmd, "seeded_segment_bytes",
                    RESERVED))
    exp.append(("r2_3_segfree.pickle", "run --recording",
                "reserved_bytes.all.peak", RESERVED))
    exp.append(("r2_3_segfree.pickle", "run --recording",
                "reserved_bytes.all.current", 2 * MiB))

    # A snapshot taken without _record_memory_history.
    write(out, "r2_3_nohistory.pickle", snapshot("2.3", [], devices=[[]]))
    exp.append(("r2_3_nohistory.pickle", "info", "no_trace_events", "true"))
    exp.append(("r2_3_nohistory.pickle", "info", "entries", 0))

    # Two devices, each with the full history at its own addresses.
    d1 = 0x100000000000
    segs = blocks_end("2.3") + blocks_end("2.3", 1, L + d1, S + d1)
    write(out, "r2_3_twodev.pickle", snapshot("2.3", FULL, segments=segs,
          devices=[entries(FULL, "2.3"), entries(FULL, "2.3",
                                                 shift=(d1, d1))]))
    exp.append(("r2_3_twodev.pickle", "info", "error",
                "devices 0 and 1 both have trace events"))
    full_figures("r2_3_twodev.pickle", " --device 1")
    full_figures("r2_3_twodev.pickle", " --device 0")

    # torch_npu's workspace_snapshot rows: an action memsim does not know.
    dev = entries(FULL, "2.6")
    dev.insert(3, {"action": "workspace_snapshot", "addr": 0x7f1000000000,
                   "size": 4096, "stream": 0, "time_us": 1700000000000025})
    write(out, "npu_workspace.pickle", snapshot("2.6", FULL, devices=[dev]))
    exp.append(("npu_workspace.pickle", "info", "error",
                "unknown action 'workspace_snapshot'"))
    exp.append(("npu_workspace.pickle", "info --lenient", "skipped_entries",
                1))
    full_figures("npu_workspace.pickle", " --lenient")

    # Expandable segments: pages of 20 MiB (large) and 2 MiB (small)
    # mapped at the start of each reservation.
    rows = [(("segment_map" if a == "segment_alloc" else a), x, n)
            for a, x, n in FULL]
    segs = blocks_end("2.11")
    for g in segs:
        g["is_expandable"] = True
    write(out, "r2_11_expandable.pickle", snapshot("2.11", rows,
          segments=segs, settings={
              "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
              "expandable_segments": True}))
    exp.append(("r2_11_expandable.pickle", "run --recording",
                "snapshot_state",
                '"matches (2 segments, %d bytes reserved, %d allocated, '
                'same blocks)"' % (RESERVED, ALLOCATED)))
    exp.append(("r2_11_expandable.pickle", "run --recording", "addr_same",
                4))

    # A recorded OOM (device_free) after the history, and a block whose
    # free waits for its stream (active_pending_free).
    rows = FULL[:-1] + [("oom", 1 << 30, 200 << 30)]
    segs = blocks_end("2.3")
    segs[1]["blocks"][0]["state"] = "active_pending_free"
    segs[1]["active_size"] = 1536
    write(out, "r2_3_oom_pending.pickle", snapshot("2.3", rows, segs))
    exp.append(("r2_3_oom_pending.pickle", "info", "oom", 1))
    # Replayed as a malloc that raises OOM, as recorded.
    exp.append(("r2_3_oom_pending.pickle", "run --recording",
                "num_ooms", 1))
    exp.append(("r2_3_oom_pending.pickle", "run --recording",
                "oom_request", -1))
    exp.append(("r2_3_oom_pending.pickle", "run --recording",
                "snapshot_state",
                '"matches (2 segments, %d bytes reserved, %d allocated, '
                'same blocks)"' % (RESERVED, ALLOCATED)))

    # A snapshot replays as it ran: its settings applied, and its oom
    # record (84 MiB reserved then, 90 MiB free, 100 MiB asked) giving
    # the device 174 MiB, on which the 100 MiB malloc fails again.  The
    # program caught it, freed the 64 MiB block and called empty_cache().
    L2, M2 = 0x7F1000000000, 0x7F1040000000
    rows = [("segment_alloc", L2, 20 * MiB), ("alloc", L2, 8 * MiB),
            ("alloc", L2 + 8 * MiB, 8 * MiB),
            ("segment_alloc", M2, 64 * MiB), ("alloc", M2, 64 * MiB),
            ("oom", 90 * MiB, 100 * MiB),
            ("free_requested", M2, 64 * MiB),
            ("free_completed", M2, 64 * MiB),
            ("segment_free", M2, 64 * MiB)]
    seg = blocks_end("2.11")[0]
    seg.update(address=L2, allocated_size=16 * MiB, active_size=16 * MiB,
               requested_size=16 * MiB)
    seg["blocks"] = [
        {"address": L2 + k * 8 * MiB, "size": n, "requested_size": n,
         "state": st, "frames": frames(1) if st != "inactive" else []}
        for k, n, st in ((0, 8 * MiB, "active_allocated"),
                         (1, 8 * MiB, "active_allocated"),
                         (2, 4 * MiB, "inactive"))]
    write(out, "r2_13_oom.pickle", snapshot("2.11", rows, segments=[seg],
          settings={"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64",
                    "max_split_size": 64 * MiB}))
    exp.append(("r2_13_oom.pickle", "run", "capacity_bytes", 174 * MiB))
    exp.append(("r2_13_oom.pickle", "run", "params",
                '"max_split_size_mb:64"'))
    exp.append(("r2_13_oom.pickle", "run", "num_ooms", 1))
    exp.append(("r2_13_oom.pickle", "run", "reserved_bytes.all.peak",
                84 * MiB))
    # --defaults: the H200 (memsim's default device) holds the 100 MiB.
    exp.append(("r2_13_oom.pickle", "run --defaults", "num_ooms", 0))
    exp.append(("r2_13_oom.pickle", "run --defaults", "params", '""'))
    exp.append(("r2_13_oom.pickle", "run --defaults",
                "reserved_bytes.all.peak", 84 * MiB + 100 * MiB))
    exp.append(("r2_13_oom.pickle", "run --capacity 100GiB", "num_ooms",
                0))
    exp.append(("r2_13_oom.pickle", "run --capacity 100GiB",
                "capacity_bytes", 100 << 30))
    exp.append(("r2_13_oom.pickle", "run -c max_split_size_mb:32",
                "params", '"max_split_size_mb:32"'))

    # Deep frames: many distinct names (stacks="all" with C++ frames).
    dev = entries(FULL, "2.11")
    for i, e in enumerate(dev):
        e["frames"] = [{"filename": "f%d.cpp" % k, "line": k,
                        "name": "fn_%d_%d" % (i, k)} for k in range(40)]
    write(out, "r2_11_frames.pickle", snapshot("2.11", FULL, devices=[dev]),
          5)
    full_figures("r2_11_frames.pickle")

    # RMM logs (rmm::mr::logging_resource_adaptor).
    hdr = "Thread,Time,Action,Pointer,Size,Stream\n"
    with open(os.path.join(out, "rmm_22_04.rmm.csv"), "w") as f:
        f.write(hdr + "".join(
            "140%d,10:00:00:%06d,%s,0x%x,%d,0x0\n" % (
                i, i, "allocate" if a == "alloc" else "free", x, n)
            for i, (a, x, n) in enumerate(FULL)
            if a in ("alloc", "free_completed")))
    exp.append(("rmm_22_04.rmm.csv", "info", "allocs", 4))
    exp.append(("rmm_22_04.rmm.csv", "info", "peak_live_bytes",
                4 * MiB + 2 * MiB + 400 + 1024))
    with open(os.path.join(out, "rmm_23_02.rmm.csv"), "w") as f:
        f.write(hdr + "1,1700000000.000001,allocate,0x7f0000000000,"
                "4194304,0x0\n1,1700000000.000002,allocate,0x0,0,0x0\n"
                "1,1700000000.000003,free,0x0,0,0x0\n"
                "1,1700000000.000004,free,0x7f0000000000,4194304,0x0\n")
    exp.append(("rmm_23_02.rmm.csv", "info", "zero_byte_skipped", 2))
    exp.append(("rmm_23_02.rmm.csv", "info", "allocs", 1))
    with open(os.path.join(out, "rmm_24_12.rmm.csv"), "w") as f:
        f.write(hdr + "7,12:30:00.000001,allocate,0x7f0000000000,4194304,"
                "0x0\n7,12:30:00.000002,allocate,(nil),0,0x0\n"
                "7,12:30:00.000003,allocate failure,(nil),"
                "214748364800,0x0\n"
                "7,12:30:00.000004,free,0x7f0000000000,4194304,0x0\n")
    exp.append(("rmm_24_12.rmm.csv", "info", "oom", 1))
    exp.append(("rmm_24_12.rmm.csv", "info", "zero_byte_skipped", 1))
    exp.append(("rmm_24_12.rmm.csv", "run", "num_ooms", 1))
    exp.append(("rmm_24_12.rmm.csv", "run", "oom_request", -1))
    with open(os.path.join(out, "rmm_partial.rmm.csv"), "w") as f:
        f.write(hdr + "7,12:30:00.000001,allocate,0x7f0000000000,4194304,"
                "0x0\n7,12:30:00.000002,free,0x7f0000800000,2097152,0x0\n"
                "7,12:30:00.000003,free,0x7f0000000000,4194304,0x0\n")
    exp.append(("rmm_partial.rmm.csv", "info", "seeded_late", 1))
    exp.append(("rmm_partial.rmm.csv", "info", "seed_exact", "false"))
    exp.append(("rmm_partial.rmm.csv", "info", "peak_live_bytes",
                6 * MiB))
    exp.append(("rmm_partial.rmm.csv", "info --strict", "error",
                "free_completed of unknown address 0x7f0000800000"))

    with open(os.path.join(out, "expected.tsv"), "w") as f:
        f.write("# made by make_corpus.py\n")
        for row in exp:
            f.write("\t".join(str(x) for x in row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
