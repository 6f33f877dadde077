#!/bin/sh
# One list of stored run fields (sim/results.h's MSIM_RUN_COLUMNS): the
# printers of one run agree.  `memsim report --json`, memsim_load()
# (tests/api_run --load) and Python's memsim.runs() give the same figures
# with the same values; `memsim run --json` of the run gives every one of
# them but what only the store knows (created, the calibration's name in
# run_meta), with the same values; `memsim info --json` of the trace says
# the same trace, format and (a run without OOM) requests.  Run by `make check` with MEMSIM and
# MSIM_TESTDATA; skips (77) without python3 (it reads the JSON).
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
PY=${PYTHON:-python3}
[ "$PY" = : ] && PY=python3
command -v "$PY" >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
top=$(cd "$(dirname "$MEMSIM")" && pwd)
srcdir=$(cd "${srcdir:-$top}" && pwd)
lib=$top/.libs/libmemsim.so.1

check_trace() { # TRACE [RUN OPTIONS...]
	trace=$1; shift
	rm -f "$tmp/r.db"
	$MEMSIM run --json --db "$tmp/r.db" "$@" "$trace" >"$tmp/run.json" ||
		{ fail "run $trace"; return; }
	$MEMSIM report --json --db "$tmp/r.db" >"$tmp/report.json" ||
		{ fail "report $trace"; return; }
	$MEMSIM info --json "$trace" >"$tmp/info.json" ||
		{ fail "info $trace"; return; }
	"$top/tests/api_run" --load "$tmp/r.db" 1 >"$tmp/load.txt" ||
		{ fail "api_run --load $trace"; return; }
	haspy=0
	[ -f "$lib" ] && haspy=1
	MEMSIM_LIBRARY=$lib PYTHONPATH=$srcdir/python \
	PYTHONDONTWRITEBYTECODE=1 "$PY" -B - "$tmp" "$haspy" \
		>"$tmp/out" 2>&1 <<'PYEOF' || fail "$trace: $(cat "$tmp/out")"
import json, math, sys
tmp, haspy = sys.argv[1], sys.argv[2] == "1"
run = json.load(open(tmp + "/run.json"))
report = json.load(open(tmp + "/report.json"))
info = json.load(open(tmp + "/info.json"))
assert len(report) == 1, "report: %d runs" % len(report)
report = report[0]

def parse(v):
    if v in ("true", "false"):
        return v == "true"
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v

load = {}
for line in open(tmp + "/load.txt"):
    name, _, v = line.rstrip("\n").partition(" ")
    load[name] = parse(v)

def same(a, b):  # numbers as printed: 3 or 6 decimals
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and math.isclose(a, b, rel_tol=0, abs_tol=5e-4)
    return a == b

def agree(what, a, b, keys):
    for k in keys:
        av, bv = a[k], b[k]
        if av is None:   # JSON null: the C API and Python say ""
            av = ""
        if not same(av, bv):
            raise SystemExit("%s: %s is %r and %r" % (what, k, a[k], b[k]))

# report --json and memsim_load(): the same names, in the same order.
if list(report) != list(load):
    raise SystemExit("report --json and memsim_load() differ: %s" %
                     sorted(set(report) ^ set(load)))
agree("report/memsim_load", report, load, report)
if haspy:
    import memsim
    rows = memsim.runs(tmp + "/r.db", as_frame=False)
    py = dict(rows[0])
    if list(py) != list(report):
        raise SystemExit("memsim.runs() and report --json differ: %s" %
                         sorted(set(py) ^ set(report)))
    agree("report/memsim.runs", report, py, report)
for k in ("trace_format", "trace_hash", "setting_key", "memsim_version",
          "kind", "addresses", "capacity_bytes", "sim_time_ns", "strategy"):
    if k not in report:
        raise SystemExit("report --json lacks " + k)
# run --json: every stored figure but what only the store knows.
only_stored = set(report) - set(run)
if only_stored != {"created", "calibration"}:
    raise SystemExit("run --json lacks %s" % sorted(only_stored))
agree("run/report", run, report, set(run) & set(report))
# info --json: the same trace, format and (a run to its end) requests.
if report["oom_request"] >= 0:
    info["requests"] = report["requests"]
if (info["trace"], info["format"], info["requests"]) != \
        (report["trace"], report["trace_format"], report["requests"]):
    raise SystemExit("info --json: %r %r %r" % (info["trace"],
                     info["format"], info["requests"]))
PYEOF
}

check_trace "$MSIM_TESTDATA/traces/bert_infer_varlen.csv"
check_trace "$MSIM_TESTDATA/traces/gpt2_varlen.csv" --policy bfc --cap 2g
finish fields
