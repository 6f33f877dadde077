"""The Python package memsim (python/memsim) against the build tree's
libmemsim: the same figures as `memsim run --json`, exact figures of a
hand-made trace under PyTorch's rules, the library's errors as
memsim.Error, the timeline, the store, and the README's example.  Run by
tests/python.sh with MEMSIM, MSIM_TESTDATA, MEMSIM_LIBRARY and srcdir."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import memsim

MEMSIM = os.environ.get("MEMSIM", "./memsim")
DATA = os.environ.get("MSIM_TESTDATA", "tests/data")
SRCDIR = os.environ.get("srcdir", ".")
GPT2 = os.path.join(DATA, "traces", "gpt2_varlen.csv")


def run_json(*args):
    out = subprocess.run([MEMSIM, "run", "--json"] + list(args),
                         check=True, stdout=subprocess.PIPE).stdout
    return json.loads(out)


class SameAsRunJson(unittest.TestCase):
    def same(self, trace, cli, **kw):
        want = run_json(*cli, trace)
        got = memsim.run(trace, **kw)
        self.assertEqual(list(want), list(got))  # the keys, in order
        self.assertGreater(len(got), 120)
        for key, value in want.items():
            if key == "wall_ms":
                continue
            if isinstance(value, float):
                self.assertAlmostEqual(got[key], value, places=6, msg=key)
            else:
                self.assertEqual(got[key], value, msg=key)
                self.assertIs(type(got[key]), type(value), msg=key)

    def test_defaults(self):
        self.same(GPT2, [])

    def test_conf_and_cap(self):
        self.same(GPT2, ["-c", "max_split_size_mb:128,"
                         "garbage_collection_threshold:0.6", "--cap",
                         "3GiB", "--keep-going"],
                  alloc_conf="max_split_size_mb:128,"
                  "garbage_collection_threshold:0.6", cap="3GiB",
                  keep_going=True)

    def test_other_policy_and_fraction(self):
        trace = os.path.join(DATA, "traces", "resnet50_amp.csv")
        self.same(trace, ["-p", "bfc", "--fraction", "0.05"], policy="bfc",
                  fraction=0.05)

    def test_snapshot_seeded(self):
        self.same(os.path.join(DATA, "pickles", "resnet50_amp.pickle"), [])

    def test_snapshot_recording(self):
        self.same(os.path.join(DATA, "pickles",
                               "train_eval_emptycache.pickle"),
                  ["--recording"], recording=True)

    def test_calibration(self):
        cal = os.path.join(DATA, "cuda_latency_h200.csv")
        self.same(GPT2, ["--calibration", cal], calibration=cal)

    def test_bad_calibration(self):
        with self.assertRaises(memsim.Error) as cm:
            memsim.run(GPT2, calibration=GPT2)
        self.assertIn("calibration: ", str(cm.exception))

    def test_model_spec(self):
        self.same("model:arch=gpt2,batch=2,seq=128,steps=1", [])


class HandMade(unittest.TestCase):
    """1000 bytes round up to 1024 (round_size) in a 2 MiB small segment
    (kSmallBuffer); 3 MiB is a large block in a 20 MiB segment
    (kLargeBuffer, under kMinLargeAlloc); both freed, none released."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.csv = os.path.join(self.tmp.name, "small.csv")
        with open(self.csv, "w") as f:
            f.write("seq,time_us,action,addr,size,stream\n"
                    "0,1,alloc,4096,1000,0\n1,2,alloc,8192,3145728,0\n"
                    "2,3,free_completed,4096,1000,0\n"
                    "3,4,free_completed,8192,3145728,0\n")

    def tearDown(self):
        self.tmp.cleanup()

    def test_figures(self):
        r = memsim.run(self.csv)
        self.assertEqual(r["requests"], 4)
        self.assertEqual(r.peak_reserved, (2 + 20) << 20)
        self.assertEqual(r.reserved_bytes_all_current, (2 + 20) << 20)
        self.assertEqual(r.peak_allocated, 1024 + (3 << 20))
        self.assertEqual(r["requested_bytes.all.peak"], 1000 + (3 << 20))
        self.assertEqual(r["allocated_bytes.all.current"], 0)
        self.assertEqual(r["segment.all.peak"], 2)
        self.assertFalse(r.oom)
        self.assertEqual(r.policy, "pytorch")

    def test_cap_makes_an_oom_a_result(self):
        r = memsim.run(self.csv, cap="4MiB")
        self.assertTrue(r.oom)
        self.assertEqual(r["oom_request"], 1)
        self.assertEqual(r["cap_bytes"], 4 << 20)
        self.assertEqual(memsim.run(self.csv, cap=4 << 20)["oom_request"],
                         1)

    def test_timeline(self):
        r = memsim.run(self.csv)
        self.assertEqual([p.request for p in r.timeline],
                         sorted(p.request for p in r.timeline))
        last = r.timeline[-1]
        self.assertEqual(last.request, 4)
        self.assertEqual(last.reserved, (2 + 20) << 20)
        self.assertEqual(max(p.allocated for p in r.timeline),
                         r.peak_allocated)

    def test_store_is_run_db(self):
        db = os.path.join(self.tmp.name, "runs.db")
        r = memsim.run(self.csv, db=db)
        self.assertEqual(r["run_id"], 1)
        self.assertEqual(run_json("--db", db, self.csv)["run_id"], 1)
        r = memsim.run(self.csv, alloc_conf="max_split_size_mb:64", db=db)
        self.assertEqual(r["run_id"], 2)


class Stored(unittest.TestCase):
    """memsim.runs() reads what `memsim run --db` stored; memsim.sweep()
    stores each setting as run(db=...) does."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.tmp.name, "runs.db")

    def tearDown(self):
        self.tmp.cleanup()

    def test_runs_are_run_db(self):
        want = [run_json("--db", self.db, GPT2),
                run_json("--db", self.db, "-c", "max_split_size_mb:128",
                         "--cap", "3GiB", "--keep-going", GPT2)]
        got = memsim.runs(self.db, as_frame=False)
        self.assertEqual([r["run_id"] for r in got], [1, 2])
        for w, g in zip(want, got):
            for key, value in w.items():
                if key == "wall_ms":
                    continue
                if isinstance(value, float):
                    self.assertAlmostEqual(g[key], value, places=6,
                                           msg=key)
                else:
                    self.assertEqual(g[key], value, msg=key)
            self.assertEqual(g["kind"], "simulated")
            self.assertEqual(g["trace_format"], "csv")
            self.assertTrue(g["setting_key"].startswith(
                "simulated|%s|pytorch|%s|%d|model|" % (
                    w["trace_hash"], w["params"], w["cap_bytes"])),
                g["setting_key"])
        # The stored curve is the replay's.
        r = memsim.run(GPT2)
        self.assertEqual(got[0].timeline, r.timeline)
        self.assertGreater(len(r.timeline), 10)

    def test_runs_errors(self):
        with self.assertRaises(memsim.Error) as cm:
            memsim.runs(os.path.join(self.tmp.name, "none.db"))
        self.assertEqual(cm.exception.name, "ENOTFOUND")
        self.assertIn("none.db", str(cm.exception))
        with open(self.db, "w") as f:
            f.write("not a database\n")
        with self.assertRaises(memsim.Error) as cm:
            memsim.runs(self.db)
        self.assertEqual(cm.exception.name, "EDB")

    def test_run_db_then_runs(self):
        memsim.run(GPT2, db=self.db)
        self.assertEqual(len(memsim.runs(self.db, as_frame=False)), 1)

    def test_sweep(self):
        confs = ["", "max_split_size_mb:128"]
        caps = ["3GiB", "4GiB"]
        got = memsim.sweep(GPT2, alloc_conf=confs, cap=caps,
                           keep_going=True, db=self.db, as_frame=False)
        self.assertEqual(len(got), 4)
        k = 0
        for conf in confs:
            for cap in caps:
                want = run_json("--keep-going", "--cap", cap,
                                *(["-c", conf] if conf else []), GPT2)
                self.assertEqual(got[k]["params"], want["params"])
                self.assertEqual(got[k]["cap_bytes"], want["cap_bytes"])
                self.assertEqual(got[k]["reserved_bytes.all.peak"],
                                 want["reserved_bytes.all.peak"])
                self.assertEqual(got[k]["run_id"], k + 1)
                k += 1
        # Stored under the setting key: `memsim run --db` of the third
        # setting replaces its row.
        again = run_json("--db", self.db, "--keep-going", "--cap", "3GiB",
                         "-c", "max_split_size_mb:128", GPT2)
        self.assertEqual(again["run_id"], 3)
        self.assertEqual(len(memsim.runs(self.db, as_frame=False)), 4)
        with self.assertRaises(memsim.Error):
            memsim.sweep(GPT2, cap=[])

    @unittest.skipUnless(
        __import__("importlib").util.find_spec("pandas"), "no pandas")
    def test_frame(self):
        memsim.run(GPT2, db=self.db)
        frame = memsim.runs(self.db)
        self.assertEqual(list(frame["run_id"]), [1])


class Errors(unittest.TestCase):
    def error(self, name, pattern, *args, **kw):
        with self.assertRaises(memsim.Error) as cm:
            memsim.run(*args, **kw)
        self.assertEqual(cm.exception.name, name, str(cm.exception))
        self.assertLess(cm.exception.code, 0)
        self.assertRegex(str(cm.exception), pattern)

    def test_policy(self):
        self.error("EPOLICY", "unknown policy 'nosuch'", GPT2,
                   policy="nosuch")

    def test_params(self):
        self.error("EPARAMS", "max_split_size_mb: 'x'", GPT2,
                   alloc_conf="max_split_size_mb:x")

    def test_option_values(self):
        self.error("EINVAL", "cap: 'lots'", GPT2, cap="lots")
        self.error("EINVAL", r"fraction: '2' is not in \(0, 1\]", GPT2,
                   fraction=2)
        self.error("ECAP", "more than the device", GPT2, cap="1TiB")

    def test_missing_trace(self):
        self.error("EIO", "/nonexistent/x.csv", "/nonexistent/x.csv")

    def test_malformed_trace(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
            f.write("seq,time_us,action,addr,size,stream\n"
                    "0,1,alloc,4096,many,0\n")
            f.flush()
            with self.assertRaises(memsim.Error) as cm:
                memsim.run(f.name)
            self.assertIn(os.path.basename(f.name) + ":2", str(cm.exception))

    def test_unknown_keyword(self):
        with self.assertRaises(TypeError):
            memsim.run(GPT2, nosuch=1)

    def test_bad_store(self):
        self.error("EDB", "/nonexistent/dir", GPT2,
                   db="/nonexistent/dir/x.db")


def same_figures(test, want, got, skip=("wall_ms",)):
    test.assertEqual(list(want), list(got))
    for key, value in want.items():
        if key not in skip:
            test.assertEqual(got[key], value, msg=key)


class Inputs(unittest.TestCase):
    """Issue 28: a snapshot dict (what torch.cuda.memory._snapshot()
    returns; here a snapshot pickle of tests/data loaded with pickle) and
    an open file give the figures of the file's path."""

    def snapshot(self, name):
        import pickle
        path = os.path.join(DATA, "pickles", name)
        with open(path, "rb") as f:
            return path, pickle.load(f)

    def test_snapshot_dict(self):
        for name, kw in (("resnet50_amp.pickle", {}),
                         ("train_eval_emptycache.pickle",
                          {"recording": True}),
                         ("gpt2_fp32.pickle", {"cap": "2GiB"})):
            path, snap = self.snapshot(name)
            self.assertIn("device_traces", snap)
            want = memsim.run(path, **kw)
            got = memsim.run(snap, **kw)
            self.assertEqual(got["trace"], "<snapshot dict>")
            same_figures(self, want, got,
                         ("wall_ms", "trace", "trace_hash"))
            self.assertEqual(got.timeline, want.timeline)

    def test_file_objects(self):
        want = memsim.run(GPT2)
        with open(GPT2, "rb") as f:
            same_figures(self, want, memsim.run(f), ("wall_ms", "trace_hash"))
        with open(GPT2) as f:  # text
            got = memsim.run(f)
        same_figures(self, want, got, ("wall_ms", "trace_hash"))
        self.assertEqual(got["trace"], GPT2)

    def test_bad_dict(self):
        with self.assertRaises(memsim.Error) as cm:
            memsim.run({"segments": 3})
        self.assertIn("<snapshot dict>", str(cm.exception))
        self.assertNotIn("memsim-", str(cm.exception))  # no temporary name

    def test_read_gives_no_bytes(self):
        class Odd:
            def read(self):
                return 42
        with self.assertRaises(TypeError):
            memsim.run(Odd())


def flatten(node, prefix=""):
    """(key, value) of the leaves of a JSON value, keys joined with dots
    (list items by their index) as memsim_explain() names its figures;
    an empty list or object is a leaf."""
    items = list(node.items() if isinstance(node, dict) else
                 enumerate(node) if isinstance(node, list) else ())
    if not items:
        yield prefix[:-1], node
    for key, value in items:
        yield from flatten(value, "%s%s." % (prefix, key))


def cli(*args):
    return subprocess.run([MEMSIM] + list(args), check=True,
                          stdout=subprocess.PIPE,
                          universal_newlines=True).stdout


class Experiments(unittest.TestCase):
    """explain, summary, tune and fit give the answers of their
    commands, for a path and for a snapshot dict alike."""

    PICKLE = os.path.join(DATA, "pickles", "resnet50_amp.pickle")

    def test_explain_as_explain_json(self):
        for args in ([], ["--cap", "1GiB", "--context-bytes", "750MiB"]):
            want = json.loads(cli("explain", "--json", *args, self.PICKLE))
            kw = {"cap": args[1], "context_bytes": args[3]} if args else {}
            got = memsim.explain(self.PICKLE, **kw)
            for key in ("trace", "policy", "params", "capacity_bytes",
                        "cap_bytes", "context_bytes", "tagged", "requests",
                        "peak", "peak_allocated", "oom_request"):
                self.assertEqual(got[key], want[key], msg=key)
            self.assertEqual("oom" in got, bool(args))
            if args:
                for key in ("size", "alloc_size", "device_free", "message",
                            "state"):
                    self.assertEqual(got["oom"][key], want["oom"][key],
                                     msg=key)
                self.assertEqual(got["oom"]["alternatives"],
                                 want["oom"]["alternatives"])
                self.assertTrue(got["oom"]["message"].startswith(
                    "CUDA out of memory. Tried to allocate "))

    def test_explain_one_list(self):
        # memsim_explain()'s figures and `memsim explain --json` are one
        # list (msim_explain_figs()): the JSON's members flattened with
        # dots, in its order, are the figures, key by key and value by
        # value, but for the empty lists and objects that the JSON shows
        # and memsim.h has no kind for (and a null, which memsim.h's
        # text reads as "": peak_allocated).  Inputs: no OOM; an OOM with
        # alternatives and the smallest cap; one at the first request
        # (no categories, no sites); a partial history (peak_allocated).
        oom = os.path.join(DATA, "explain", "oom.csv")
        gpt2 = os.path.join(DATA, "traces", "gpt2_fp32.csv")
        late = os.path.join(DATA, "snapshots", "h200_late.pickle")
        cases = ((self.PICKLE, {}),
                 (self.PICKLE, {"cap": "1GiB", "context_bytes": "750MiB"}),
                 (oom, {"cap": "40MiB"}), (gpt2, {"cap": "1MiB"}),
                 (late, {}))
        met = set()
        for trace, kw in cases:
            args = [a for k, v in kw.items()
                    for a in ("--" + k.replace("_", "-"), v)]
            want = list(flatten(json.loads(cli("explain", "--json",
                                                *args, trace))))
            met.update(k.split(".")[-1] + repr(v) for k, v in want
                       if v in ([], {}))
            met.update(k for k, _ in want)
            want = [(k, "" if v is None else v) for k, v in want
                    if v not in ([], {})]
            got = memsim._figures(trace, memsim.DEFAULT_POLICY, None,
                                  kw.pop("cap", None), kw,
                                  lambda lib: lib.memsim_explain)
            self.assertEqual([k for k, _ in want], list(got), msg=trace)
            self.assertEqual(want, list(got.items()), msg=trace)
        for key in ("sites[]", "categories{}", "oom.min_cap",
                    "oom.alternatives.0.setting", "peak_allocated.request",
                    "summary_at_peak"):
            self.assertIn(key, met)

    def test_explain_before_history_sites(self):
        # A partial history whose snapshot blocks carry frames: the
        # blocks from before it by the site of their frames.
        snap = os.path.join(DATA, "snapshots", "r2_11_blockframes.pickle")
        want = json.loads(cli("explain", "--json", snap))
        got = memsim.explain(snap)
        for key in ("peak", "peak_allocated"):
            self.assertEqual(got[key], want[key], msg=key)
        self.assertEqual(got["peak"]["sites"][1],
                         {"site": "model.py:20 build",
                          "category": "before history",
                          "bytes": 6 << 20, "blocks": 2})

    def test_explain_dict(self):
        import pickle
        with open(self.PICKLE, "rb") as f:
            snap = pickle.load(f)
        want = memsim.explain(self.PICKLE, cap="1GiB")
        got = memsim.explain(snap, cap="1GiB")
        self.assertEqual(got.pop("trace"), "<snapshot dict>")
        want.pop("trace")
        self.assertEqual(got, want)

    def test_summary(self):
        self.assertEqual(memsim.summary(GPT2), cli("summary", GPT2))
        self.assertEqual(memsim.summary(GPT2, at_peak=True),
                         cli("summary", "--at", "peak", GPT2))
        self.assertIn("PyTorch CUDA memory summary", memsim.summary(GPT2))

    def test_tune(self):
        got = memsim.tune(GPT2, "15GiB")
        out = cli("tune", "--cap", "15GiB", "-j1", "--db",
                  os.path.join(self.tmp, "t.db"), GPT2)
        conf = re.search(r'^export PYTORCH_CUDA_ALLOC_CONF="(.*)"$', out,
                         re.M).group(1)
        self.assertEqual(got, {"alloc_conf": conf, "fits": True})
        self.assertEqual(memsim.tune(GPT2, 16106127360), got)
        # Its setting fits, no higher than the defaults' peak.
        best = memsim.run(GPT2, alloc_conf=got["alloc_conf"], cap="15GiB")
        self.assertFalse(best.oom)
        self.assertLessEqual(best.peak_reserved,
                             memsim.run(GPT2).peak_reserved)
        self.assertEqual(memsim.tune(GPT2, "1MiB"),
                         {"alloc_conf": None, "fits": False})
        with self.assertRaises(memsim.Error):
            memsim.tune(GPT2, "lots")

    def test_fit(self):
        pattern = os.path.join(DATA, "record", "gptfit-{B}.bin")
        out = cli("fit", "--cap", "6442450944", "--vary", "B=10..22",
                  "--traces", pattern)
        b = int(re.search(r"^largest *B=([0-9]+)", out, re.M).group(1))
        self.assertEqual(memsim.fit(pattern, "B", 10, 22, "6GiB"),
                         {"name": "B", "best": b})
        with self.assertRaises(memsim.Error) as cm:
            memsim.fit(os.path.join(DATA, "record", "x.bin"), "B", 1, 2,
                       "6GiB")
        self.assertIn("{B}", str(cm.exception))

    def test_frames(self):
        # pandas is imported only for as_frame=True; a stand-in module
        # shows what reaches pandas.DataFrame (a row of the figures).
        import types
        sys.modules.pop("pandas", None)
        r = memsim.run(GPT2)
        memsim.explain(GPT2)
        self.assertNotIn("pandas", sys.modules)
        fake = types.ModuleType("pandas")
        fake.DataFrame = lambda rows: ("frame", rows)
        sys.modules["pandas"] = fake
        try:
            kind, rows = memsim.run(GPT2, as_frame=True)
            self.assertEqual(kind, "frame")
            self.assertEqual(len(rows), 1)
            same_figures(self, r, rows[0])
            kind, rows = memsim.explain(self.PICKLE, as_frame=True)
            self.assertEqual(rows[0]["peak.all.reserved"],
                             memsim.explain(self.PICKLE)["peak"]["all"]
                             ["reserved"])
        finally:
            del sys.modules["pandas"]

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()


def _unknown_policy(trace):
    return memsim.run(trace, policy="nosuch")


class Hostile(unittest.TestCase):
    """Issue 26: errors cross processes; NUL bytes and wrong types are
    refused, not cut short or guessed."""

    def test_error_pickles(self):
        import pickle
        e = pickle.loads(pickle.dumps(memsim.Error("x.csv:2: bad", -6)))
        self.assertIsInstance(e, memsim.Error)
        self.assertEqual((str(e), e.code, e.name), ("x.csv:2: bad", -6,
                                                    "EFORMAT"))

    def test_error_in_pool_worker(self):
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(1) as pool:
            res = pool.map_async(_unknown_policy, [GPT2])
            with self.assertRaises(memsim.Error) as cm:
                res.get(timeout=60)  # a hang is a TimeoutError
        self.assertEqual(cm.exception.name, "EPOLICY")
        self.assertIn("nosuch", str(cm.exception))

    def test_nul_bytes(self):
        for kw in ({"trace": GPT2 + "\0.csv"}, {"policy": "bfc\0x"},
                   {"alloc_conf": "max_split_size_mb:128\0,x"},
                   {"cap": "1GiB\0"}, {"db": "x\0.db"},
                   {"trace": os.fsencode(GPT2) + b"\0"}):
            args = dict({"trace": GPT2}, **kw)
            with self.assertRaises(ValueError, msg=repr(kw)) as cm:
                memsim.run(args.pop("trace"), **args)
            self.assertIn("NUL", str(cm.exception))
        with self.assertRaises(ValueError):
            memsim.runs("x\0.db")

    def test_wrong_types(self):
        with self.assertRaises(TypeError) as cm:
            memsim.run(42)
        self.assertIn("trace", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            memsim.run(GPT2, policy=3)
        self.assertIn("policy", str(cm.exception))
        with self.assertRaises(TypeError):
            memsim.runs(None)


class Module(unittest.TestCase):
    def test_policies(self):
        names = [name for name, _ in memsim.policies()]
        self.assertEqual(names[0], "pytorch")
        # the signatures' default is the library's (policies/registry.h)
        self.assertEqual(names[0], memsim.DEFAULT_POLICY)
        self.assertIn("bfc", names)
        self.assertTrue(all(summary for _, summary in memsim.policies()))

    def test_version(self):
        out = subprocess.run([MEMSIM, "--version"], check=True,
                             stdout=subprocess.PIPE).stdout.decode()
        self.assertEqual(out.split()[-1], memsim.__version__)

    def test_docstrings(self):
        for obj in (memsim, memsim.run, memsim.runs, memsim.sweep,
                    memsim.Result, memsim.Error):
            self.assertTrue(obj.__doc__ and len(obj.__doc__) > 40)


class ReadmeExample(unittest.TestCase):
    """The README's Python example, run as it stands from the top of the
    source tree."""

    def test_readme(self):
        with open(os.path.join(SRCDIR, "README.md")) as f:
            text = f.read()
        m = re.search(r"<!-- python example -->\n```python\n(.*?)```", text,
                      re.S)
        self.assertIsNotNone(m, "README.md lacks the Python example")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        out = subprocess.run([sys.executable, "-B", "-c", m.group(1)],
                             cwd=SRCDIR, env=env, check=True,
                             stdout=subprocess.PIPE).stdout.decode()
        want = run_json("-c", "max_split_size_mb:128", "--cap", "16GiB",
                        os.path.join(DATA, "traces", "gpt2_varlen.csv"))
        lines = out.splitlines()
        self.assertEqual(lines[0], "peak reserved %d bytes, frag %.4f, "
                         "OOM False" % (want["reserved_bytes.all.peak"],
                                        want["frag_at_peak"]))
        self.assertRegex(lines[1], r"^\d+ points, last reserved \d+$")
        pick = os.path.join(DATA, "pickles", "resnet50_amp.pickle")
        self.assertEqual(lines[2], "CUDA out of memory")
        self.assertEqual(lines[3], str(memsim.tune(pick, "4GiB")))
        self.assertEqual(len(lines), 4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
