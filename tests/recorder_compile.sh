#!/bin/sh
# torch.compile under memsim record --fake (traces/memsim_record/
# compiled.py, docs/recording-compile.md): the compiled program's buffers,
# against the real H200 runs of tests/data/compile.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
DATA=${MSIM_TESTDATA:-tests/data}/compile
G=$SRC/recorder/gpt_compile.py
peaks() { # TRACE -> "allocated reserved" of its replay
	$MEMSIM run --json "$1" >"$tmp/p.json" || { echo "run failed"; return; }
	echo "$(key allocated_bytes.all.peak "$tmp/p.json") $(key reserved_bytes.all.peak "$tmp/p.json")"
}
# within A B PCT: |A - B| <= PCT% of B
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d * 100 <= p * b) }'; }
real() { awk -v n="$1" '$1 == n { print $(NF-1), $NF }' "$DATA/real.tsv"; }

# 1. The committed real traces replay to the peaks torch reported.
for n in small_default gpt2_default gpt2_reduce_overhead; do
	[ "$(peaks "$DATA/$n.real.bin")" = "$(real $n)" ] ||
		fail "$n: real trace replays to $(peaks "$DATA/$n.real.bin"), torch said $(real $n)"
done

# 2. The small GPT (2 layers, 128 wide), compiled and trained 2 steps: the
# model's peaks exactly (the partitioner's saved activations, the fused
# kernels' buffers, the autotuner's L2 flush buffer at the first call),
# within 3% / 5% of the real run.  Above the eager recording's, as on the
# H200: the 60 MiB flush buffer outweighs what fusion saves at this size.
$MEMSIM record -o "$tmp/small.csv" -- "$PY" "$G" 4 64 2 128 1024 2 default \
	2>"$tmp/err" || fail "record small: $(tail -3 "$tmp/err")"
grep -q "compile:inductor 1)" "$tmp/err" || fail "small: $(tail -1 "$tmp/err")"
$MEMSIM record -o "$tmp/small_eager.csv" -- "$PY" "$G" 4 64 2 128 1024 2 eager \
	2>"$tmp/err" || fail "record small eager: $(tail -3 "$tmp/err")"
set -- $(peaks "$tmp/small.csv")
pa=$1 pr=$2
[ "$pa $pr" = "139686400 203423744" ] || fail "small compiled peaks $pa $pr"
set -- $(real small_default)
within "$pa" "$1" 3 || fail "small: allocated $pa, real $1"
within "$pr" "$2" 5 || fail "small: reserved $pr, real $2"
set -- $(peaks "$tmp/small_eager.csv")
[ "$pa" -gt "$1" ] || fail "small: compiled $pa not above eager $1"
# the first call's autotuning: one 60 MiB (the H200's L2) block a tuned
# kernel, none after
n=$(grep -c ',alloc,[0-9]*,62914560,.*,triton autotune L2 flush$' "$tmp/small.csv")
[ "$n" -gt 0 ] || fail "small: no autotune flush"

# 3. GPT-2 small (12 layers, 768, batch 8 x 512), 3 steps: the model's
# peaks exactly, within 3% / 5% of the real compiled run, and below the
# eager recording's (which is the real eager run's: 32% / 37% above).
for m in default eager; do
	$MEMSIM record -o "$tmp/gpt2_$m.csv" -- "$PY" "$G" 8 512 12 768 50304 3 $m \
		2>"$tmp/err" || fail "record gpt2 $m: $(tail -3 "$tmp/err")"
done
set -- $(peaks "$tmp/gpt2_default.csv") $(real gpt2_default)
[ "$1 $2" = "4915930624 5194645504" ] || fail "gpt2 compiled peaks $1 $2"
within "$1" "$3" 3 || fail "gpt2: allocated $1, real $3"
within "$2" "$4" 5 || fail "gpt2: reserved $2, real $4"
set -- $1 $2 $(peaks "$tmp/gpt2_eager.csv")
[ "$1" -lt "$3" ] && [ "$2" -lt "$4" ] || fail "gpt2: compiled $1 $2, eager $3 $4"
[ "$3 $4" = "$(real gpt2_eager)" ] || fail "gpt2 eager $3 $4, real $(real gpt2_eager)"

# mode="reduce-overhead": cudagraph trees, the warm-up and the capture in
# the tree's private pool on its own stream, replays allocating nothing;
# within 3% / 5% of the real run (whose reserved peak is 13% above the
# default mode's: the pool's blocks serve no other allocation).
$MEMSIM record -o "$tmp/gpt2_ro.csv" -- "$PY" "$G" 8 512 12 768 50304 3 reduce-overhead \
	2>"$tmp/err" || fail "record gpt2 reduce-overhead: $(tail -3 "$tmp/err")"
grep -q "(compile:cudagraphs 1, compile:inductor 1)$" "$tmp/err" ||
	fail "reduce-overhead: $(tail -1 "$tmp/err")"
set -- $(peaks "$tmp/gpt2_ro.csv") $(real gpt2_reduce_overhead)
[ "$1 $2" = "4868156416 5897191424" ] || fail "gpt2 reduce-overhead peaks $1 $2"
within "$1" "$3" 3 || fail "gpt2 reduce-overhead: allocated $1, real $3"
within "$2" "$4" 5 || fail "gpt2 reduce-overhead: reserved $2, real $4"
# The tree's reference, 2 warm-ups, 2 copies to static inputs (the
# forward's token ids, the backward's incoming gradient), 2 captures: 7
# pool_begin rows, as in the H200 trace.
n=$(grep -c ',pool_begin,' "$tmp/gpt2_ro.csv")
[ "$n" -eq 7 ] || fail "reduce-overhead: $n pool_begin rows"
# the third step replays: after the last pool_end, nothing compiled
# allocates (the optimizer, the inputs, the loss's gradient do)
last=$(grep -n ',pool_end,' "$tmp/gpt2_ro.csv" | tail -1 | cut -d: -f1)
n=$(tail -n +"$last" "$tmp/gpt2_ro.csv" |
	awk -F, '$3 == "alloc" && ($8 ~ /^compiled / || $8 ~ /CompiledFunction/)' | wc -l)
[ "$n" -eq 0 ] || fail "reduce-overhead: $n allocations in the replays"

# The same for inference: tests/recorder/pools.py's MLP under
# mode="reduce-overhead", 6 calls under no_grad, against its H200 trace
# (tests/data/pools/compiled.real.csv): the warm-up's autotuning (the L2
# flush buffer at each fused kernel) makes the peak.
printf 'import sys\nsys.path.insert(0, "%s")\nimport pools\npools.compiled()\n' \
	"$SRC/recorder" >"$tmp/pools_compiled.py"
$MEMSIM record -o "$tmp/pc.csv" -- "$PY" "$tmp/pools_compiled.py" \
	2>"$tmp/err" || fail "record pools compiled: $(tail -3 "$tmp/err")"
set -- $(peaks "$tmp/pc.csv") $(peaks "$DATA/../pools/compiled.real.csv")
[ "$1 $2" = "199528448 203423744" ] || fail "pools compiled peaks $1 $2"
within "$1" "$3" 3 || fail "pools compiled: allocated $1, real $3"
within "$2" "$4" 5 || fail "pools compiled: reserved $2, real $4"

# Training under reduce-overhead with two batch sizes (a second graph, then
# a dynamic one) and inference with two input shapes alternating, calling
# torch.compiler.cudagraph_mark_step_begin() each step (which imports
# cudagraph_trees: a CPU-only PyTorch cannot); tests/recorder/poolopts.py
# against its H200 traces in tests/data/pools.  The replay is within 3% /
# 5%, though the recorder writes no pool_restore rows (docs).
for w in compiled_infer compiled_train_shapes; do
	printf 'import sys\nsys.path.insert(0, "%s")\nimport poolopts\npoolopts.stats = lambda *a: None\npoolopts.%s()\n' \
		"$SRC/recorder" $w >"$tmp/$w.py"
	$MEMSIM record -o "$tmp/$w.csv" -- "$PY" "$tmp/$w.py" \
		2>"$tmp/err" || { fail "record $w: $(tail -3 "$tmp/err")"; continue; }
	set -- $(peaks "$tmp/$w.csv") $(peaks "$DATA/../pools/$w.real.csv")
	within "$1" "$3" 3 || fail "$w: allocated $1, real $3"
	within "$2" "$4" 5 || fail "$w: reserved $2, real $4"
done
# One default-mode training step of an MLP (tests/recorder/gen_models.py
# compile_mlp, real trace in tests/data/real_gen): both peaks exactly; the
# eager recording had reserved 4% low.
$MEMSIM record -o "$tmp/cm.csv" -- "$PY" "$SRC/recorder/gen_models.py" compile_mlp \
	2>"$tmp/err" || fail "record compile_mlp: $(tail -3 "$tmp/err")"
[ "$(peaks "$tmp/cm.csv")" = "$(peaks "$DATA/../real_gen/compile_mlp.real.msimtr")" ] ||
	fail "compile_mlp: $(peaks "$tmp/cm.csv"), real $(peaks "$DATA/../real_gen/compile_mlp.real.msimtr")"

# A ViT-style encoder compiled for inference (tests/recorder/
# vit_compile.py, 32 images, 6 layers, 384 wide): Inductor's buffer plan,
# the GELU written in place over its matmul's output (its copy beside
# the autotuner's flush buffer makes the H200's peak) and the wrapper's
# reuse pool under should_reuse_buffer's estimated peak.  Allocated
# within 1% of the H200 (it was 16.7% low before those rules); the
# reserved peak is 8.8% high, as it was (docs/recording-compile.md).
$MEMSIM record -o "$tmp/vit.csv" -- "$PY" "$SRC/recorder/vit_compile.py" 32 6 384 3 \
	2>"$tmp/err" || fail "record vit: $(tail -3 "$tmp/err")"
set -- $(peaks "$tmp/vit.csv") $(real vit_32x6x384)
[ "$1 $2" = "217636352 260046848" ] || fail "vit compiled peaks $1 $2"
within "$1" "$3" 1 || fail "vit: allocated $1, real $3"

# transformers' GPT-2 compiled, its loss computed by the model (tests/
# recorder/hf_compile_loss.py): the loss logs a warning inside the
# compiled forward, a graph break whose first compile leaves the first
# step's model output, with its logits, in a reference cycle; collected
# before each graph's first run, as a real run's compile brings the
# collector soon (it was 16.8% / 11.3% high).  Within 2% / 2% of the
# H200: -1.1% / 0 with the kernel order of least estimated peak
# (reorder_for_peak_memory; +0.19% / -0.70% in the graphs' own order).
# Skipped without transformers.
if "$PY" -c 'import transformers' 2>/dev/null; then
	$MEMSIM record -o "$tmp/hfl.csv" -- "$PY" "$SRC/recorder/hf_compile_loss.py" \
		2>"$tmp/err" || fail "record hf_compile_loss: $(tail -3 "$tmp/err")"
	set -- $(peaks "$tmp/hfl.csv") $(real hf_compile_loss)
	[ "$1 $2" = "200159744 297795584" ] || fail "hf_compile_loss peaks $1 $2"
	within "$1" "$3" 2 || fail "hf_compile_loss: allocated $1, real $3"
	within "$2" "$4" 2 || fail "hf_compile_loss: reserved $2, real $4"
fi

# 4. The forms of torch.compile: a module (with dropout: Inductor's random
# number passes), a function, Module.compile(),
# @torch.compile(mode=...) nesting a compiled module, disable=True (run as
# written, no assumption), another backend (eager: compile:eager).
cat >"$tmp/comp.py" <<'PY'
import sys
import torch
import torch.nn as nn
on = sys.argv[1] == "1"
comp = torch.compile if on else (lambda m=None, **k: m if m is not None else (lambda f: f))
m = nn.Sequential(nn.Linear(256, 1024), nn.Dropout(0.1), nn.GELU(),
                  nn.Linear(1024, 256)).cuda()
m2 = nn.Linear(256, 256).cuda()
if on:
    m2.compile()
cm = comp(m)
@comp(mode="max-autotune-no-cudagraphs")
def step(x):
    return (cm(x) * 2).sum()
off = comp(lambda x: m2(x).relu(), disable=True)
other = comp(lambda x: x.sin().cos(), backend="eager")
x = torch.randn(64, 256, device="cuda")
loss = step(x) + off(x).sum() + other(x).sum()
loss.backward()
PY
for on in 0 1; do
	$MEMSIM record -o "$tmp/comp$on.csv" -- "$PY" "$tmp/comp.py" $on \
		2>"$tmp/err" || fail "record compile $on: $(tail -3 "$tmp/err")"
done
grep -q "; 4 assumptions (compile:eager 1, compile:inductor 3)$" "$tmp/err" ||
	fail "compile forms: $(tail -1 "$tmp/err")"
# The compiled forwards allocate activations at the site "compiled NAME":
# step (the compiled Sequential inlined into it).  m2.compile() compiles
# Module._call_impl, whose frame Dynamo skips (torch.nn's files), as it
# skips Linear.forward's, and F.linear is C++: m2 runs eagerly (the
# H100, torch 2.11: 2 frames, 2 graphs, step's and the eager backend's;
# before, the recorder compiled its own F.linear as a graph).
grep -q ",activation,compiled step\$" "$tmp/comp1.csv" || fail "no activation at compiled step"
grep -q ",activation,compiled Linear\$" "$tmp/comp1.csv" && fail "m2 compiled"
# Under compile, the backward is one compiled node, not autograd's nodes.
grep -q ',backward GeluBackward0$' "$tmp/comp1.csv" && fail "eager GELU backward under compile"
grep -q ',backward GeluBackward0$' "$tmp/comp0.csv" || fail "no GELU backward eagerly"

# 5. A graph break (torch._dynamo.graph_break, a tensor value read with
# .item()): two graphs and the Python between them, recorded.
cat >"$tmp/gb.py" <<'PY'
import torch
@torch.compile
def f(x, w):
    y = (x @ w).relu() * 2
    torch._dynamo.graph_break()
    z = y.sum(1)
    if z.max().item() > 0:
        z = z * 3
    return (y @ w).sum() + z.sum()
x = torch.randn(64, 256, device="cuda")
w = torch.randn(256, 256, device="cuda", requires_grad=True)
for _ in range(2):
    f(x, w).backward()
print("graph break ok")
PY
$MEMSIM record -o "$tmp/gb.csv" -- "$PY" "$tmp/gb.py" 2>"$tmp/err" ||
	fail "record graph break: $(tail -3 "$tmp/err")"
grep -q "graph break ok" "$tmp/err" || fail "graph break: $(cat "$tmp/err")"
# (the graphs' own nodes go by the value rules as eager ops do,
# compiled.Program._values: their comparisons and counts of values not
# known are assumed as eager ones', finite 4 and mask 2)
grep -q "compile:inductor 1, finite 4, item:float 2, mask 2)$" "$tmp/err" ||
	fail "graph break assumptions: $(tail -1 "$tmp/err")"
$MEMSIM run "$tmp/gb.csv" >/dev/null || fail "memsim run of the graph break recording"

# 6. A tensor built from data inside the compiled code (transformers'
# DynamicCache does it): make_fx would compute the small constant for
# real, moved to the GPU; it is traced instead, and compiles.
cat >"$tmp/const.py" <<'PY'
import torch
@torch.compile
def f(x):
    c = torch.tensor([], dtype=x.dtype, device=x.device)
    return torch.cat([c, x.relu()]) * 2
x = torch.randn(1000, device="cuda", requires_grad=True)
f(x).sum().backward()
PY
$MEMSIM record -o "$tmp/const.csv" -- "$PY" "$tmp/const.py" 2>"$tmp/err" ||
	fail "record a constant in compiled code: $(tail -3 "$tmp/err")"
grep -q "; 1 assumption (compile:inductor 1)$" "$tmp/err" ||
	fail "constant: $(tail -1 "$tmp/err")"
# A graph that AOTAutograd or Inductor's passes fail on (here a custom
# joint-graph pass that raises) runs eagerly, with one line saying so and
# an assumption: relu's, cat's and the product's outputs, at f's line.
cat >"$tmp/fb.py" <<'PY'
import torch
import torch._inductor.config as config
def bad_pass(graph):
    raise RuntimeError("a pass that fails")
config.joint_custom_pre_pass = bad_pass
@torch.compile
def f(x):
    return torch.cat([x, x.relu()]) * 2
x = torch.randn(1000, device="cuda", requires_grad=True)
f(x).sum().backward()
PY
$MEMSIM record -o "$tmp/fb.csv" -- "$PY" "$tmp/fb.py" 2>"$tmp/err" ||
	fail "record eager-graph fallback: $(tail -3 "$tmp/err")"
grep -q "^memsim record: a graph of compiled f runs eagerly: .*a pass that fails" "$tmp/err" ||
	fail "fallback line: $(cat "$tmp/err")"
grep -q "(compile:eager-graph 1, compile:inductor 1)$" "$tmp/err" ||
	fail "fallback assumptions: $(tail -1 "$tmp/err")"
n=$(awk -F, '$3 == "alloc" && $8 ~ / f$/' "$tmp/fb.csv" | wc -l)
[ "$n" -eq 3 ] || fail "fallback: $n blocks in f"

finish recorder_compile.sh
