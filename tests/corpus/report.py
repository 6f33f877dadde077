"""The corpus table of docs/corpus.md: per program, the real H200 peaks
(real_h200.tsv, from tests/corpus/device.sh) against the predicted ones
(expected.tsv, `memsim run` of `memsim record --fake`'s trace), the error
of each in percent of the real figure, and the median and worst error
over the programs that both ran for real and record.

    python3 tests/corpus/report.py [REAL.tsv [EXPECTED.tsv]]
"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def rows(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or line.startswith("name\t") or not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            out[fields[0]] = fields[1:]
    return out


def mib(b):
    return "%.1f" % (int(b) / 2**20)


def main():
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__.strip())
        return
    real_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "real_h200.tsv")
    exp_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "expected.tsv")
    real, exp = rows(real_path), rows(exp_path)
    order = [l.split("\t")[0] for l in open(os.path.join(HERE, "programs.tsv"))
             if not l.startswith("#") and l.strip()]
    print("| program | real alloc MiB | pred alloc MiB | err alloc | "
          "real reserved MiB | pred reserved MiB | err reserved |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    ea, er = [], []
    for n in order:
        r = real.get(n)
        e = exp.get(n)
        ra, rr = (r[1], r[2]) if r and r[0] == "0" else (None, None)
        ok = e and e[0] == "ok"
        pa, pr = (e[1], e[2]) if ok else (None, None)
        cells = [n]
        cells.append(mib(ra) if ra else "no real run (exit %s)" % (r[0] if r else "-"))
        cells.append(mib(pa) if pa else "fails: " + (e[3] if e else "-"))
        if ra and pa:
            a = 100.0 * (int(pa) - int(ra)) / int(ra)
            ea.append(abs(a))
            cells.append("%+.2f%%" % a)
        else:
            cells.append("")
        cells.append(mib(rr) if rr else "")
        cells.append(mib(pr) if pr else "")
        if rr and pr:
            x = 100.0 * (int(pr) - int(rr)) / int(rr)
            er.append(abs(x))
            cells.append("%+.2f%%" % x)
        else:
            cells.append("")
        print("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    print()
    if ea:
        print("Over the %d programs that ran for real and record: |error| of peak "
              "allocated median %.2f%%, worst %.2f%%; of peak reserved median "
              "%.2f%%, worst %.2f%%." % (len(ea), statistics.median(ea), max(ea),
                                         statistics.median(er), max(er)))
    else:
        print("No program both ran for real and records yet: no error to state.")


if __name__ == "__main__":
    main()
