#!/bin/sh
# torch.cuda as PyTorch has it under memsim record --fake (issue 25, failure
# kind 6): every function and class of torch.cuda the recorder replaces
# keeps the installed PyTorch's signature (inspect.signature, methods
# included); keyword arguments work; torch.cuda.device(), a CUDA
# torch.Generator; memory_stats() has PyTorch's full key
# set, so memory_summary() works; a CUDA build's version queries are
# answered.  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
SRC=$(cd "$(dirname "$0")/.." && pwd)

# The replacements against the originals, in one interpreter: every
# attribute of torch.cuda (and its submodules, torch.accelerator) that
# _patch_cuda changes.
cat >"$tmp/sig.py" <<'PY'
import inspect
import sys
import types
import torch
import torch.cuda.memory, torch.cuda.random, torch.cuda.streams
import torch.cuda.nvtx, torch.cuda.profiler
from memsim_record import fake

mods = [torch.cuda, torch.cuda.memory, torch.cuda.random, torch.cuda.streams,
        torch.accelerator, torch.nn.parallel.comm, torch.cuda.nvtx,
        torch.cuda.profiler]
before = [dict(m.__dict__) for m in mods]
opt = types.SimpleNamespace(world_size=1, item_int=1, item_bool=False)
fake._patch_cuda(torch, fake.Recorder(opt), "h200")

def sig(f):
    """Parameters: names, kinds and defaults (annotations aside); None
    for a builtin without one (a CUDA build's Stream.__enter__)."""
    try:
        s = inspect.signature(f)
    except (TypeError, ValueError):
        return None
    e = inspect.Parameter.empty
    return str(s.replace(parameters=[p.replace(annotation=e) for p in
                                     s.parameters.values()],
                         return_annotation=e))

n, bad = 0, []
for m, old in zip(mods, before):
    for name, orig in old.items():
        new = m.__dict__.get(name)
        if name.startswith("__") or new is orig or not callable(orig):
            continue
        n += 1
        if sig(orig) is not None and sig(new) != sig(orig):
            bad.append("%s.%s%s, PyTorch's %s" % (m.__name__, name, sig(new), sig(orig)))
        if isinstance(orig, type):
            for meth in dir(orig):
                if meth.startswith("_") and meth not in ("__enter__", "__exit__"):
                    continue
                o = getattr(orig, meth)
                if not callable(o) or isinstance(o, type):
                    continue
                if not hasattr(new, meth):
                    bad.append("%s.%s.%s missing" % (m.__name__, name, meth))
                elif sig(o) is not None and sig(getattr(new, meth)) != sig(o):
                    bad.append("%s.%s.%s%s, PyTorch's %s" % (
                        m.__name__, name, meth, sig(getattr(new, meth)), sig(o)))
print("replaced", n)
for b in bad:
    print("differs:", b)
sys.exit(1 if bad or n < 30 else 0)
PY
PYTHONPATH="$SRC/traces" PYTHONDONTWRITEBYTECODE=1 "$PY" "$tmp/sig.py" >"$tmp/out" 2>&1 ||
	fail "signatures: $(grep -v '^replaced' "$tmp/out" | head -5)"

# Keyword arguments, streams, events, memory_summary, the CUDA build.
cat >"$tmp/k6.py" <<'PY'
import torch
torch.cuda.synchronize(device=0)
torch.cuda.synchronize(device=torch.device("cuda", 0))
torch.cuda.get_device_properties(device=0)
x = torch.empty(1024, 1024, device="cuda")
s = torch.cuda.Stream(device=0, priority=-1)
e = torch.cuda.Event(enable_timing=True)
with torch.cuda.stream(stream=s):
    e.record(stream=s)
torch.cuda.current_stream().wait_event(event=e)
with torch.cuda.device(0), torch.cuda.device_of(x):
    torch.cuda.set_per_process_memory_fraction(0.5)
print("fraction", torch.cuda.get_per_process_memory_fraction(),
      torch.cuda.initial_seed() == torch.initial_seed())
g = torch.Generator(device="cuda").manual_seed(0)
torch.randn(4, generator=g, device="cuda")
print("generator", g.device, isinstance(torch.default_generator, torch.Generator))
print("allocated", torch.cuda.memory_allocated(device="cuda:0"))
st = torch.cuda.memory_stats(device=0)
print("stats", len(st), st["allocated_bytes.all.current"], st["num_ooms"],
      st["requested_bytes.large_pool.peak"])
print(torch.cuda.memory_summary(device=0, abbreviated=True).splitlines()[1])
print("cuda", torch.version.cuda is not None, torch.backends.cudnn.version() > 0,
      torch.backends.cudnn.is_available(), torch.cuda.get_arch_list())
try:
    torch.cuda.synchronize(0, 1)
except TypeError as err:
    print("TypeError", err)
PY
$MEMSIM record -o "$tmp/k6.csv" -- "$PY" "$tmp/k6.py" >"$tmp/out" 2>&1 ||
	fail "kind 6: $(tail -3 "$tmp/out")"
grep -q "^allocated 4194304$" "$tmp/out" || fail "memory_allocated(device=)"
grep -q "^fraction 0.5 True$" "$tmp/out" || fail "device(), device_of(), the memory fraction"
grep -q "^generator cuda:0 True$" "$tmp/out" || fail "torch.Generator(device='cuda')"
# PyTorch's keys: 9 pooled stats x 3 pools x 4 metrics, 2 oversize x 4, 6
# counters and max_split_size; the values the modelled caching
# allocator's (the 4 MiB block is of the large pool)
grep -q "^stats 123 4194304 0 4194304$" "$tmp/out" || fail "memory_stats: $(grep stats "$tmp/out")"
grep -q "PyTorch CUDA memory summary, device ID 0" "$tmp/out" || fail "memory_summary"
grep -q "^cuda True True True \['sm_90'\]$" "$tmp/out" || fail "a CUDA build's answers"
grep -q "^TypeError .*positional argument" "$tmp/out" ||
	fail "too many arguments: not PyTorch's TypeError"
# A profiling-instrumented script (NVTX ranges, torch.cuda.profiler) runs
# as on a GPU with no profiler attached: NVTX's push and pop answer
# NVTX_NO_PUSH_POP_TRACKING (-2), a range start 0 (as the H200 did), the
# profiler's start and stop succeed (the script's output goes to memsim
# record's stderr); a build without CUDA raised.
cat >"$tmp/nvtx.py" <<'PY'
import torch
print(torch.cuda.nvtx.range_push("a"), torch.cuda.nvtx.range_pop(),
      torch.cuda.nvtx.range_start("b"), torch.cuda.nvtx.mark("m"))
with torch.cuda.nvtx.range("step {}", 3):
    x = torch.ones(1024, device="cuda")
torch.cuda.profiler.start()
torch.cuda.profiler.stop()
with torch.cuda.profiler.profile():
    y = x * 2
PY
$MEMSIM record --fake -o "$tmp/nvtx.csv" -- "$PY" "$tmp/nvtx.py" >"$tmp/out" \
	2>"$tmp/err" || fail "nvtx: $(tail -3 "$tmp/err")"
grep -qx -- "-2 -2 0 None" "$tmp/err" || fail "nvtx: $(cat "$tmp/err")"
[ "$(grep -c ",alloc," "$tmp/nvtx.csv")" -eq 2 ] || fail "nvtx: $(cat "$tmp/nvtx.csv")"

# The device's properties that kernels' configuration pickers read
# (shared memory by compute capability, the L2 cache memsim devices knows):
# an H200 (sm90: as get_device_properties() said on the H200) and an A10G
# (sm86).
cat >"$tmp/props.py" <<'PY'
import torch
p = torch.cuda.get_device_properties(0)
print("props", p.major, p.minor, p.shared_memory_per_block,
      p.shared_memory_per_block_optin, p.shared_memory_per_multiprocessor,
      p.max_threads_per_block, p.L2_cache_size, p.multi_processor_count)
torch.zeros(1, device="cuda")
PY
for d in "h200 props 9 0 49152 232448 233472 1024 62914560 132" \
	"a10g props 8 6 49152 101376 102400 1024 6291456 80"; do
	$MEMSIM record --device "${d%% *}" -o "$tmp/props.csv" -- "$PY" \
		"$tmp/props.py" >/dev/null 2>"$tmp/err" || fail "props: $(tail -3 "$tmp/err")"
	grep -qx "${d#* }" "$tmp/err" || fail "props ${d%% *}: $(grep props "$tmp/err")"
done

# scaled_dot_product_attention on the backend the program left enabled
# (torch.nn.attention.sdpa_kernel): flash, memory-efficient and cuDNN
# attention replay to the H200's peaks (torch 2.11, 2 December 2026:
# allocated and reserved); the math path's fp32 scores and weights are
# recorded (the H200: 377520640 / 400556032 bytes; cuDNN attention was
# recorded whatever the program enabled).
for b in "flash 8520704 23068672" "eff 8388608 20971520" \
	"cudnn 8390144 23068672" "math"; do
	set -- $b
	$MEMSIM record -o "$tmp/sdpa.csv" -- "$PY" "$SRC/tests/recorder/sdpa_backend.py" \
		$1 >/dev/null 2>"$tmp/err" || { fail "sdpa $1: $(tail -3 "$tmp/err")"; continue; }
	$MEMSIM run --json "$tmp/sdpa.csv" >"$tmp/sdpa.json" || fail "sdpa $1: run"
	a=$(key allocated_bytes.all.peak "$tmp/sdpa.json")
	r=$(key reserved_bytes.all.peak "$tmp/sdpa.json")
	if [ $# -eq 3 ]; then
		[ "$a $r" = "$2 $3" ] || fail "sdpa $1: $a $r, the H200 $2 $3"
	else   # two fp32 score tensors (4 x 8 x 1024 x 1024) live at once
		[ "$a" -gt 268435456 ] || fail "sdpa math: $a bytes"
	fi
done

# PyTorch's memory-debugging workflow (the memory_viz tutorial) runs: the
# history recorded, a snapshot dumped (into the recording's scratch
# folder: the user's file untouched), an out-of-memory observer attached,
# metadata kept; a build without CUDA raised at _record_memory_history.
cat >"$tmp/viz.py" <<'PY'
import pickle, torch
torch.cuda.memory._record_memory_history(max_entries=100000)
torch._C._cuda_attach_out_of_memory_observer(lambda *a: None)
x = torch.empty(1 << 20, device="cuda")
torch.cuda.memory._set_memory_metadata("step 1")
print("meta", torch.cuda.memory._get_memory_metadata())
torch.cuda.memory._dump_snapshot("snap.pickle")
with open("snap.pickle", "rb") as f:
    print("keys", sorted(pickle.load(f)))
torch.cuda.memory._record_memory_history(enabled=None)
PY
echo mine >"$tmp/snap.pickle"
(cd "$tmp" && $MEMSIM record --fake -o viz.csv -- "$PY" viz.py) >"$tmp/out" \
	2>"$tmp/err" || fail "memory_viz: $(tail -3 "$tmp/err")"
grep -qx "meta step 1" "$tmp/err" && grep -qx "keys \['device_traces', 'segments'\]" \
	"$tmp/err" || fail "memory_viz: $(cat "$tmp/err")"
[ "$(cat "$tmp/snap.pickle")" = mine ] || fail "memory_viz: the user's snapshot overwritten"

# torch.__config__.show() (PyTorch Geometric asks it at import, for
# USE_MKL): the CUDA hooks that say a GPU is there must not make a CPU
# build's show_config() ask them for the CUDA section they cannot give
# ("Cannot query detailed CUDA version without ATen_cuda library").
cat >"$tmp/cfg.py" <<'PY'
import torch
print("config", torch.__config__.show().splitlines()[0])
torch.zeros(1, device="cuda")
PY
$MEMSIM record --fake -o "$tmp/cfg.csv" -- "$PY" "$tmp/cfg.py" >"$tmp/out" \
	2>"$tmp/err" || fail "torch.__config__.show(): $(tail -1 "$tmp/err")"
grep -qx "config PyTorch built with:" "$tmp/err" ||
	fail "torch.__config__.show(): $(head -3 "$tmp/err")"

# The legacy tensor types (torch.cuda.FloatTensor(...), x.type(T),
# isinstance, set_default_tensor_type) and memory_allocated() in blocks
# of round_size: the output of python3 legacy_types.py on the H200
# (PyTorch 2.11, 3 December 2026), line for line.
$MEMSIM record --fake -o "$tmp/lt.csv" -- "$PY" "$SRC/tests/recorder/legacy_types.py" \
	>"$tmp/out" 2>"$tmp/err" || fail "legacy types: $(tail -3 "$tmp/err")"
grep -E '^(numpy|sizes|long|type|name|host|list|byte|size|same|isinstance|default|peak) ' \
	"$tmp/err" >"$tmp/lt" || fail "legacy types: $(tail -3 "$tmp/err")"
diff "$SRC/tests/data/record/legacy_types.h200.txt" "$tmp/lt" >"$tmp/diff" ||
	fail "legacy types differ from the H200's: $(cat "$tmp/diff")"

# torch.cuda.caching_allocator_alloc and _delete (a block of PyTorch's
# pool for another library: the trace's 1 MiB request and its free);
# the NVML readings (an idle device's 0, no pynvml asked); torch.profiler
# with its CUDA activity, asked or by default, and the legacy
# use_cuda=True (a CUDA event an op, each failing with a C++ stack).
cat >"$tmp/raw.py" <<'PY'
import torch
x = torch.randn(64, 64, device="cuda")
p = torch.cuda.caching_allocator_alloc(1 << 20)
print("raw", torch.cuda.memory_allocated() - x.nbytes)
torch.cuda.caching_allocator_delete(p)
print("deleted", torch.cuda.memory_allocated() - x.nbytes)
print("nvml", torch.cuda.utilization(), torch.cuda.temperature())
from torch.profiler import profile, ProfilerActivity
for acts in ([ProfilerActivity.CPU, ProfilerActivity.CUDA], None):
    with profile(activities=acts) as prof:
        y = x @ x
    print("profiled", "aten::mm" in prof.key_averages().table())
with torch.autograd.profiler.profile(use_cuda=True) as prof:
    y = x @ x
print("legacy", "aten::mm" in prof.key_averages().table())
PY
$MEMSIM record --fake -o "$tmp/raw.csv" -- "$PY" "$tmp/raw.py" >"$tmp/out" \
	2>"$tmp/err" || fail "raw alloc: $(tail -3 "$tmp/err")"
for want in "raw 1048576" "deleted 0" "nvml 0 0" "profiled True" "legacy True"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(grep -v '^ ' "$tmp/err")"
done
grep -q "CUDA used in profiler" "$tmp/err" && fail "profiler: CUDA events recorded"
grep -q ',alloc,[0-9]*,1048576,0,other,raw.py:3 <module>$' "$tmp/raw.csv" ||
	fail "raw alloc: $(grep 1048576 "$tmp/raw.csv")"

finish recorder_torchcuda
