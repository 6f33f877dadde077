#!/usr/bin/env python3
"""Makes the request files (validate/torch_replay.py's protocol, which
validate/device/async_replay.py reads) of the traces listed in
validate/device/async_traces.tsv: tests/data traces as they are, `memsim gen`
ones generated, and "merge A | B" two generated traces interleaved in
proportion (A on stream 0, B's streams moved up by one: two jobs sharing
a device, one on a side stream).  docs/cuda-async.md §3.

usage: async_traces.py MEMSIM TESTDATA OUTDIR [SET...]
Writes OUTDIR/NAME.req (and NAME.csv for generated traces).  The request
file is the one `memsim validate --mode torch` hands its bridge, kept by a
stand-in bridge.  Standard library only.
"""
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def gen(memsim, args, out):
    subprocess.run([memsim] + args + ["-o", out], check=True,
                   stderr=subprocess.DEVNULL)


def merge(a, b, out):
    """Rows of a (stream 0) and b (streams + 1, addresses moved apart)
    interleaved by their position in their own trace."""
    def rows(p):
        with open(p) as fp:
            return list(csv.DictReader(fp))
    ra, rb = rows(a), rows(b)
    tagged = [(i / len(ra), 0, r) for i, r in enumerate(ra)]
    for j, r in enumerate(rb):
        r = dict(r)
        r["addr"] = str(int(r["addr"]) + (1 << 44))
        r["stream"] = str(int(r["stream"]) + 1)
        tagged.append((j / len(rb), 1, r))
    tagged.sort(key=lambda t: (t[0], t[1]))
    with open(out, "w", newline="") as fp:
        w = csv.writer(fp)
        w.writerow(["seq", "time_us", "action", "addr", "size", "stream"])
        for k, (_, _, r) in enumerate(tagged):
            w.writerow([k, k, r["action"], r["addr"], r["size"],
                        r["stream"]])


def requests(memsim, trace, out):
    """The request file memsim validate --mode torch writes."""
    with tempfile.TemporaryDirectory() as d:
        bridge = os.path.join(d, "bridge")
        with open(bridge, "w") as fp:
            fp.write('#!/bin/sh\ncp "$2" "$REQ_DEST"\necho "oom -1"\n')
        os.chmod(bridge, 0o755)
        env = dict(os.environ, REQ_DEST=out)
        subprocess.run([memsim, "validate", "--mode", "torch", "--python",
                        bridge, trace], check=True, env=env,
                       stdout=subprocess.DEVNULL)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    memsim, data, outdir = sys.argv[1:4]
    sets = sys.argv[4:]
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(HERE, "async_traces.tsv")) as fp:
        lines = [l.rstrip("\n").split("\t") for l in fp
                 if l.strip() and not l.startswith("#")]
    for name, set_, src in lines[1:]:
        if sets and set_ not in sets:
            continue
        csvp = os.path.join(outdir, name + ".csv")
        if src.startswith("merge "):
            a, b = (s.split() for s in src[6:].split("|"))
            with tempfile.TemporaryDirectory() as d:
                gen(memsim, a, os.path.join(d, "a.csv"))
                gen(memsim, b, os.path.join(d, "b.csv"))
                merge(os.path.join(d, "a.csv"), os.path.join(d, "b.csv"),
                      csvp)
            trace = csvp
        elif src.startswith("gen "):
            gen(memsim, src.split(), csvp)
            trace = csvp
        else:
            trace = os.path.join(data, src)
        requests(memsim, trace, os.path.join(outdir, name + ".req"))
        print(name, set_, trace)


if __name__ == "__main__":
    main()
