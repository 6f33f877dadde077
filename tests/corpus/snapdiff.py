"""Compare a real run's allocator history with a recording, request by request.

    python3 snapdiff.py [--min BYTES] [--context N] [--all] REAL.pickle RECORDED.csv

REAL.pickle: torch.cuda.memory._dump_snapshot of the real run (device.sh
with CORPUS_SNAPSHOTS=1, see wrap.py); RECORDED.csv: `memsim record --fake`'s
trace of the same program.  Each side becomes a list of requests, "+SIZE"
for an alloc and "-SIZE" for a free (free_completed in the snapshot; the
size of the block freed), with the site each came from (the innermost
Python frame outside torch for the snapshot; the site column for the
trace).  The two lists are aligned (difflib) and every stretch where they
differ is printed with its sites, so a missing workspace, an extra copy or
a reordered free shows as one short hunk.  Stream numbers are printed
when they are not 0.  --min BYTES compares only the requests of at least
BYTES (the large pool's, say: 1048577), --context N prints N aligned
requests before each hunk (2), --all prints every hunk (else the first
40).  Exit status 0 when the two lists are the same, 1 when they differ.
"""
import csv
import difflib
import pickle
import sys


def _site(frames):
    for f in frames:
        name = f["filename"]
        if "/torch/" not in name and "<frozen" not in name \
                and not name.endswith("wrap.py"):
            return "%s:%d %s" % (name.rsplit("/", 1)[-1], f["line"], f["name"])
    return frames[0]["filename"].rsplit("/", 1)[-1] + ":%d" % frames[0]["line"] \
        if frames else "?"


def real_requests(path):
    with open(path, "rb") as f:
        snap = pickle.load(f)
    out = []
    for e in snap["device_traces"][0]:
        a = e["action"]
        if a not in ("alloc", "free_completed"):
            continue
        sign = "+" if a == "alloc" else "-"
        tok = "%s%d" % (sign, e["size"])
        if e.get("stream", 0):
            tok += "@s%d" % e["stream"]
        out.append((tok, _site(e.get("frames") or [])))
    return out


def recorded_requests(path):
    out, live = [], {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            a = row["action"]
            if a == "alloc":
                live[row["addr"]] = row.get("site", "")
                sign, site = "+", row.get("site", "")
            elif a in ("free_completed", "free"):
                sign, site = "-", live.pop(row["addr"], "")
            else:
                continue
            tok = "%s%s" % (sign, row["size"])
            if row.get("stream", "0") not in ("0", ""):
                tok += "@s" + row["stream"]
            out.append((tok, site))
    return out


def main():
    import argparse
    ap = argparse.ArgumentParser(
        description="the real run's requests against a recording's")
    ap.add_argument("real")
    ap.add_argument("recorded")
    ap.add_argument("--min", type=int, default=0)
    ap.add_argument("--context", type=int, default=2)
    ap.add_argument("--all", action="store_true")
    a = ap.parse_args()
    try:
        real = real_requests(a.real)
        rec = recorded_requests(a.recorded)
    except (OSError, pickle.UnpicklingError, KeyError, IndexError,
            csv.Error, ValueError, EOFError) as e:
        sys.exit("snapdiff.py: %s" % e)

    def big(tok):
        return int(tok[1:].split("@")[0]) >= a.min
    real = [r for r in real if big(r[0])]
    rec = [r for r in rec if big(r[0])]
    print("real: %d requests, recorded: %d" % (len(real), len(rec)))
    sm = difflib.SequenceMatcher(a=[t for t, _ in real],
                                 b=[t for t, _ in rec], autojunk=False)
    hunks = 0
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        hunks += 1
        if hunks > 40 and not a.all:
            continue
        print("@@ real %d..%d  recorded %d..%d  (%s)" % (i1, i2, j1, j2, tag))
        for k in range(max(0, i1 - a.context), i1):
            print("   %-14s %s" % real[k])
        for k in range(i1, i2):
            print(" R %-14s %s" % real[k])
        for k in range(j1, j2):
            print(" F %-14s %s" % rec[k])
    print("%d hunks" % hunks)
    return 1 if hunks else 0


if __name__ == "__main__":
    sys.exit(main())
