"""torch.compile under --fake: the compiled program's allocations.

Inductor cannot run here (docs/recording-compile.md says where it stops
without a GPU), so what a compiled module or function allocates is
predicted in two parts:

- The graphs are PyTorch's own.  TorchDynamo captures the program's graphs
  (graph breaks and guards as in a real run) and AOTAutograd splits each
  into a forward and a backward graph as Inductor has it: its
  decompositions (select_decomp_table), joint-graph passes and
  partitioner (compile_fx.partition_fn: min_cut_rematerialization_
  partition), then its post-grad passes on each graph.  The forward's
  outputs are what the compiled program saves for backward.  All of it
  runs on the recorder's fake tensors.

- The buffers are Inductor's, by rule (Program below): each node of a
  graph is either an extern kernel, which Inductor calls as ATen runs it
  (extern_kernels.mm / addmm / bmm, the attention kernels, convolution:
  run under the recorder, their outputs and their kernels' workspaces
  recorded as in eager), or part of a fused Triton kernel.  Fused nodes
  allocate nothing unless their value leaves the kernel: a graph output
  (a saved activation, a gradient) or the input of an extern kernel gets a
  buffer of its storage's size (empty_strided_cuda in the generated
  wrapper), allocated where it is computed; a fused kernel whose output
  has the size and dtype of an input buffer read there for the last time
  writes in place (Inductor's inplace reuse, "# reuse").  Every buffer is
  freed after the last kernel that reads it ("del buf"), graph inputs
  included: the runtime hands its arguments over (args.clear()); unless
  a later buffer of its size and dtype takes its memory (the wrapper's
  reuse pool, Program._plan_reuse).

- At the first launch in the process of each distinct Triton kernel
  with several configurations, Triton's autotuner allocates an L2-sized
  buffer (benchmark_gpu's cache flush) and frees it, with copies of the
  buffers the kernel mutates around each timed run (Runtime.flush,
  Program._kernel_keys).  A scatter writes into a buffer of its own,
  made by a fill kernel when it starts from a constant, a copy of its
  target otherwise, with a kernel over the elements it scatters
  (Program._scattered); a backward
  graph's incoming gradients live until it returns (the autograd
  engine holds them).  flex_attention and its backward are Inductor's
  Triton templates: their buffers (the log-sum-exp, the max scores, the
  backward's delta and gradients) are made as the generated code makes
  them (Program.flex_forward, flex_backward).

- While a graph compiles, Inductor's pad_mm pass benchmarks the matmuls
  whose dimensions are not aligned, on the GPU: random copies of their
  operands, the GEMMs (cuBLAS's workspace at the thread's first), an
  L2-flush buffer (PadBench).

mode="reduce-overhead" adds CUDA graphs: cudagraph trees' warm-up, capture
and replays in the tree's private pool (Program.graphed).  What is
modelled and what is approximated: docs/recording-compile.md.
"""
import functools
import operator
import weakref
from . import devices
from . import host
from . import values
from .symbolic import hint as _hint

# Ops Inductor does not lower into Triton kernels but calls as ATen kernels
# (lowering.py's make_fallback and the ExternKernel choices of tuned_mm /
# tuned_addmm / tuned_bmm in default mode).
EXTERN = {
    "mm", "addmm", "bmm", "baddbmm", "_int_mm", "_scaled_mm", "convolution",
    "convolution_backward", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_backward",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_cudnn_attention_backward",
    "_efficient_attention_forward", "_efficient_attention_backward",
    "_flash_attention_forward", "_flash_attention_backward",
    "_cudnn_rnn", "_cudnn_rnn_backward", "sort", "topk", "_fft_r2c",
    "_fft_c2r", "_fft_c2c", "nonzero", "_embedding_bag",
    "_embedding_bag_backward", "native_group_norm_backward",
    "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "angle", "cumsum",
    "cumprod", "_linalg_svd", "linalg_lstsq", "_fused_rms_norm",
    "_fused_rms_norm_backward",
}


# The L2 cache of each --device, in bytes (cudaDeviceProp::l2CacheSize):
# the buffer triton.testing.do_bench fills to flush the cache between
# benchmark runs of one kernel (the H200 trace: 62914560-byte blocks at
# the compiled program's first call).
L2_BYTES = devices.L2_BYTES  # memsim devices (sim/gpu.c)


# Ops Inductor lowers into a buffer of their own: its reductions
# (lowering.py's make_reduction, var_mean) and scatters.
REDUCTIONS = {
    "sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "var_mean",
    "var", "std", "any", "all", "max", "min", "nansum", "logsumexp",
    "prepare_softmax_online", "scatter", "scatter_add", "scatter_reduce",
    "index_put", "index_add", "index_put_",
    "_unsafe_index_put", "_unsafe_index_put_",
    "_unsafe_masked_index_put_accumulate",
}


# The reductions whose kernels' configurations Program._reduction_configs
# counts (a scatter's kernel is a pointwise one).
CONFIG_REDUCTIONS = {
    "sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "var_mean",
    "var", "std", "any", "all", "max", "min", "nansum", "logsumexp",
    "prepare_softmax_online",
}


# The scatters among them: Inductor's lowering realizes the tensor they
# write into (their first argument) as a buffer and the scatter's kernel
# writes into it (ir.Scatter, a mutation).
SCATTERS = REDUCTIONS - CONFIG_REDUCTIONS

# index_put and its kin: their kernel iterates over the indices' shape
# and the dimensions of the target they leave (index_put_impl_); the
# in-place ones (Inductor's reinplacing pass: index_put_ for an
# index_put whose target nothing else reads) write the target itself,
# the others a clone of it.
INDEX_PUTS = {"index_put", "index_put_", "_unsafe_index_put",
              "_unsafe_index_put_", "_unsafe_masked_index_put_accumulate"}
INPLACE_SCATTERS = {"index_put_", "_unsafe_index_put_"}

# Graph inputs the scheduler's peak estimate does not free (Inductor's
# is_nonfreeable_buffers, by the placeholder's name): what remains is a
# backward graph's saved activations.
NONFREEABLE = ("primals_", "arg", "fwd_rng_state", "bwd_rng_state",
               "tangents")

# Ops that fill a new tensor with a constant: a scatter's zeros, made by
# a pointwise kernel of their own in the buffer the scatter writes.
FILLS = {"full", "zeros", "new_zeros", "full_like", "zeros_like",
         "new_full"}


def _pointwise_configs(numel):
    """How many configurations pointwise() leaves a one-dimensional
    kernel of NUMEL elements: two (blocks of bs and bs // 2 elements,
    bs >= 256), but one for at most 128, where both shrink to the size
    hint (NUMEL rounded up to a power of two) in triton_config and, with
    the same warps, are one after unique_configs."""
    return 1 if numel <= 128 else 2


def _inner_configs(r, xs):
    """How many configurations the kernel of an inner reduction of R
    elements over XS rows has (Program._reduction_configs): one, but for
    a persistent one of fewer than 256 (rounded up to a power of two),
    one per row block of 1, 8, 32 and 128 within 4,096 elements and XS."""
    if r > 1024:
        return 1
    rh = 1 << max(0, (r - 1).bit_length())
    if rh >= 256:
        return 1
    return len([b for b in (1, 8, 32, 128)
                if b == 1 or (rh * b <= 4096 and b <= xs)])


def _numel_of(node):
    """A node's number of elements by its size hint, as Inductor's
    heuristics read sizes (sizevars.size_hint): int() of a symbolic numel
    would add a guard that pins it, and one on a symbol of no input
    (a jagged tensor's inner sizes under AOTAutograd) stops Dynamo's
    produce_guards."""
    v = node.meta.get("val") if hasattr(node, "meta") else None
    try:
        return _hint(v.numel())
    except Exception:
        return None


def _acc_reads_threshold():
    """Inductor's realize_acc_reads_threshold: the loads past which a
    value is stored (has_exceeded_max_reads)."""
    from torch._inductor import config
    return getattr(config, "realize_acc_reads_threshold", None) or \
        getattr(config, "_realize_acc_reads_threshold_default", 8)


def _name(node):
    t = getattr(node, "target", None)
    return getattr(getattr(t, "overloadpacket", None), "__name__", None)


def _writes_first(node):
    """Whether NODE's op writes its first argument (an in-place op)."""
    t = getattr(node, "target", None)
    try:
        args = t._schema.arguments
        return bool(args) and args[0].alias_info is not None and \
            args[0].alias_info.is_write
    except Exception:
        return False


def _is_view(node):
    t = getattr(node, "target", None)
    try:
        return bool(t is not None and t.is_view)
    except Exception:
        return False


class Program:
    """One graph of the compiled program (a forward, a backward or an
    inference graph) and its buffer plan."""

    def __init__(self, torch, rec, gm, kind, rt, site, cudagraphs=False,
                 tune_all=False, donated=()):
        self.torch = torch
        self.rec = rec
        self.gm = gm
        self.kind = kind
        self.rt = rt
        # forward graphs allocate activations at the site "compiled NAME"
        # (the module's class or the function's name), as a module would
        self.owner = None if kind == "backward" else \
            type(site, (), {})()
        nodes = list(gm.graph.nodes)
        # the placeholders AOTAutograd donates to a backward graph (their
        # positions: bw_donated_idxs)
        ph = [n for n in nodes if n.op == "placeholder"]
        self.donated = {ph[i] for i in donated if 0 <= i < len(ph)}
        self.tune_all = tune_all
        self._plan(nodes)
        order = self._realize_order()
        if order is not None:
            self._plan(order)
        try:
            order = self._peak_order()
        except Exception:
            order = None        # (the graph's own order, as a tie keeps)
        if order is not None:
            self._plan(order)
        self.calls = 0
        self.cudagraphs = cudagraphs
        # the static copies of the inputs once the graph is recorded
        # (graphed: None until then)
        self.static = None

    def _plan(self, nodes):
        """The buffer plan of the graph's NODES in the order the kernels
        run."""
        torch = self.torch
        self.nodes = nodes
        idx = {n: i for i, n in enumerate(nodes)}
        # base: the node whose buffer a view node's value lives in.
        base = {}
        for n in nodes:
            if n.op == "call_function" and (
                    _is_view(n) or n.target is operator.getitem and
                    n.args and _is_view(n.args[0])) and n.args and \
                    isinstance(n.args[0], torch.fx.Node):
                # (a getitem of unbind's or split's list is a view too)
                base[n] = base.get(n.args[0], n.args[0])
            else:
                base[n] = n
        self.base = base
        # last use of each node's buffer (a view's use is its base's;
        # carried to the kernels its readers are fused into below, once
        # the realized values are known).
        last = {}
        for n in nodes:
            for a in n.all_input_nodes:
                b = base[a]
                last[b] = idx[n]
        self.last = last
        # Which values get a buffer.
        out = self.out = [n for n in nodes if n.op == "output"][0]
        # the buffers the graph returns
        self.outputs = {base[a] for a in out.all_input_nodes}
        buf = set(self.outputs)
        for n in nodes:
            if n.op == "call_function" and self.extern(n):
                for a in n.all_input_nodes:
                    buf.add(base[a])
        # a scatter writes into a buffer of its own (Inductor's lowering
        # realizes the tensor it writes, a constant's after its fill
        # kernel: embedding_dense_backward's zeros), however its value is
        # read
        self.fills = {}
        for n in nodes:
            if n.op == "call_function" and _name(n) in SCATTERS and \
                    n.args and isinstance(n.args[0], torch.fx.Node):
                buf.add(n)
                f = n.args[0]
                if _name(f) in FILLS and len(f.users) == 1:
                    self.fills[n] = f
        self.buffers = buf
        # the values Inductor stores (the extra buffers below are among
        # them already)
        self.realized = self._realized()
        # and a value read both by a full reduction and by a kernel that
        # reads the reduction's result (_across_reduction)
        buf |= self._across_reduction()
        # and an index_put or scatter that is not in place clones its
        # target into that buffer first (the lowering's clone(x),
        # realized: a pointwise kernel of the target's elements, which
        # computes it there when it is a constant: the fill above)
        self.copies = {n: n.args[0] for n in nodes
                       if n.op == "call_function" and n in buf and
                       _name(n) in SCATTERS and
                       _name(n) not in INPLACE_SCATTERS and
                       n not in self.fills and n.args and
                       isinstance(n.args[0], torch.fx.Node)}
        # Triton's autotuner benchmarks each fused kernel at its first
        # launch (the H200 traces: an L2 flush buffer at pointwise and
        # reduction kernels alike) when it has several configurations
        # (_configs below).
        self.tuned = {n for n in buf
                      if n.op == "call_function" and not self.extern(n)
                      and self._configs(n, n) > 1}
        # and the kernels that write a graph input in place (an inference
        # graph's input mutations, copy_(input, value) at its end: the
        # kernel that computes the value stores it there)
        self.tuned |= {n for n in nodes
                       if n.op == "call_function" and _name(n) == "copy_"
                       and n.args and isinstance(n.args[0], torch.fx.Node)
                       and base[n.args[0]].op == "placeholder"
                       and self._configs(n, n.args[1]) > 1}
        # and a scatter's fill kernel, launched before the scatter's
        # (Runtime.flush at the scatter, once its buffer is allocated)
        self.tuned |= {f for f in self.fills.values()
                       if self._configs(f, f) > 1}
        # Which kernel each tuned node launches: its autotuner benchmarks
        # once a process (Runtime.flush), at the first launch of the key,
        # unless the kernel is a reduction's with one configuration
        # (_reduction_configs).
        self._red = {}          # _reduction_of's answers
        self.fill_nodes = set(self.fills.values())
        self.kernel = self._kernel_keys(idx)
        # A value inlined into a later kernel reads its inputs there (a
        # GELU's mul, erf and add over its matmul's output, fused into
        # the kernel that stores their product): a buffer is last used by
        # the last kernel whose fused nodes read it, and the wrapper frees
        # it after that kernel (the scheduler's free_buffers after each
        # kernel it emits), not at the node that reads it first.
        for k in nodes:
            if k.op != "call_function" or k not in self.realized or \
                    self.extern(k) or self.part_of_extern(k):
                continue
            j = idx[k]
            for m in self._fused(k):
                for a in m.all_input_nodes:
                    b = base[a]
                    if last.get(b, -1) < j:
                        last[b] = j
        frees = {}
        for b, i in last.items():
            frees.setdefault(i, []).append(b)
        self.frees = frees
        self._plan_inplace(nodes)
        self._plan_reuse(nodes, idx)

    def _realize_order(self):
        """The graph's nodes in the order Inductor's lowering makes their
        buffers, or None where that is the graph's own.  Lowering a
        pointwise node makes no buffer: its value is realized where a
        reader needs it stored (GraphLowering.run_node stores it at the
        node itself when several nodes read it and one needs realized
        inputs, or when its loads exceed realize_acc_reads_threshold:
        those stay).
        A value stored only because extern kernels read it (through
        views: the contiguous clone an einsum's bmm reads) is stored
        when the first of them is lowered, so its kernel runs just
        before that one, not where the graph computes it: the second
        einsum of mixture-of-experts' MoE clones its combine tensor
        (33.5 MB) after the experts' matmuls, though the post-grad
        graph (reorder_for_locality) has the clone first."""
        acc = _acc_reads_threshold()
        nodes, base = self.nodes, self.base
        idx = {n: i for i, n in enumerate(nodes)}
        views = {}
        for n in nodes:
            if base[n] is not n:
                views.setdefault(base[n], []).append(n)
        moved = {}
        for n in nodes:
            if n.op != "call_function" or n not in self.buffers or \
                    base[n] is not n or n in self.outputs or \
                    self.extern(n) or \
                    self.part_of_extern(n) or _name(n) in REDUCTIONS or \
                    n in self.fills.values() or _writes_first(n):
                continue
            readers = [u for m in [n] + views.get(n, [])
                       for u in m.users if base[u] is not n]
            if not readers or not all(
                    u.op == "call_function" and self.extern(u)
                    for u in readers):
                continue
            if len(n.users) > 1 and any(base[u] is not n for u in n.users):
                continue    # (several readers: realize_hint may store it)
            loads = {a for m in self._fused(n) for a in m.all_input_nodes
                     if a in self.realized}
            if len(loads) > acc:
                continue    # (has_exceeded_max_reads: stored at itself)
            first = min(readers, key=idx.get)
            if idx[first] > idx[n] + 1:
                moved[n] = first
        if not moved:
            return None
        before = {}
        for n, first in moved.items():
            before.setdefault(first, []).append(n)
        new, done, waiting = [], set(), []

        def ready(m):
            return all(a in done for a in m.all_input_nodes)
        for m in nodes:
            if m in moved:
                continue
            # the moved values, then their views (and what reads them
            # only through views), which wait in the graph's order: one
            # pass puts a view of a view after its own base
            held, waiting = waiting, []
            for w in before.pop(m, []) + held + [m]:
                if w in moved or ready(w):
                    new.append(w)
                    done.add(w)
                else:
                    waiting.append(w)
        if waiting or len(new) != len(nodes):
            return None     # (not a topological order: left as it was)
        return new

    def _peak_order(self):
        """The graph's nodes in the order Inductor's scheduler runs their
        kernels (reorder_for_peak_memory, peakorder.py), or None where
        that is the graph's own.  The kernels are the values that get a
        buffer and the extern kernels (an extern's getitems its outputs);
        each reads the buffers and graph inputs its inlined values reach.
        The nodes are then written kernel by kernel, each after what it
        inlines and reads.  A graph that writes a buffer or an input in
        place (an in-place op, a copy_ into an input, a user's Triton
        kernel, an in-place scatter) keeps its order: the rule knows no
        order of its writes and reads."""
        from . import peakorder
        torch = self.torch
        nodes, base = self.nodes, self.base
        for n in nodes:
            if n.op == "call_function" and (
                    (_name(n) or "").endswith("_") or _writes_first(n) or
                    self.user_kernel(n) or _name(n) in INPLACE_SCATTERS):
                return None
        kernels = [n for n in nodes if n.op == "call_function" and
                   base[n] is n and not self.part_of_extern(n) and
                   (n in self.buffers or self.extern(n))]
        if len(kernels) < 2:
            return None
        outs = []
        for k in kernels:
            parts = [u for u in k.users if self.part_of_extern(u)]
            outs.append(parts if parts and not isinstance(
                k.meta.get("val"), torch.Tensor) else [k])
        made = {b for bs in outs for b in bs}
        size = {b: self._nbytes(b) for b in made}
        inputs = []

        def reads(k):
            """The buffers and graph inputs K's kernel reads: back from
            its inputs through what is inlined (views to their base)."""
            found, seen = [], set()
            stack = list(reversed(k.all_input_nodes))
            while stack:
                a = stack.pop()
                b = base[a]
                if b in seen:
                    continue
                seen.add(b)
                if b.op == "placeholder":
                    # is_nonfreeable_buffers: the parameters and inputs
                    # of a forward or inference graph, the gradients and
                    # RNG states given to a backward are not counted
                    if not str(b.target).startswith(NONFREEABLE):
                        found.append(b)
                        if b not in size:
                            size[b] = self._nbytes(b)
                            inputs.append(b)
                elif b in made:
                    found.append(b)
                elif b.op == "call_function":
                    stack.extend(reversed(b.all_input_nodes))
            return found
        rd = [reads(k) for k in kernels]
        out = self.out
        graph = peakorder.Graph(outs, rd, size, inputs, self.outputs)
        order = graph.best()
        if order is None:
            return None
        # the nodes, each kernel's after what it reads and inlines
        done, new = set(), []

        def emit(n):
            stack = [n]
            while stack:
                m = stack[-1]
                if m in done:
                    stack.pop()
                    continue
                todo = [a for a in m.all_input_nodes if a not in done]
                if todo:
                    stack.extend(reversed(todo))
                    continue
                stack.pop()
                done.add(m)
                new.append(m)
        for n in nodes:
            if n.op in ("placeholder", "get_attr"):
                emit(n)
        for i in order:
            emit(kernels[i])
            for b in outs[i]:
                emit(b)
        for n in nodes:
            if n is not out:
                emit(n)
        emit(out)
        return new

    def extern(self, n):
        return _name(n) in EXTERN or self.template(n) or \
            self.user_kernel(n) or self.rng_wrapped(n)

    def rng_wrapped(self, n):
        """Whether N runs a seeded op under a generator of its own
        (graphsafe_run_with_rng_state(op, *args, rng_state=g): the
        partitioner's graph-safe RNG functionalization of a checkpointed
        seeded op the backward recomputes, the attention kernel with
        dropout).  Inductor lowers it as a fallback (lowering.py:
        make_fallback), an extern kernel that runs the wrapped op as ATen
        runs it, on generator g: its outputs and temporaries are the
        op's own (_extern_call runs the op itself; the fake ops take no
        values from a generator)."""
        return self._hop(n, "graphsafe_run_with_rng_state")

    def user_kernel(self, n):
        """Whether N launches the program's own Triton kernel
        (triton_kernel_wrapper_mutation: Dynamo's capture of
        `kernel[grid](...)`; Inductor's UserDefinedTritonKernel): its
        tensor arguments are buffers, as an extern kernel's are (it reads
        and writes memory, nothing fuses into it), and it allocates
        nothing.  The functional form's clones (tensors_to_clone), which
        Inductor's reinplacing removes where the input dies at the call,
        are not modelled."""
        return self._hop(n, "triton_kernel_wrapper_mutation")

    def _hop(self, n, *names):
        """Whether N calls one of the higher-order operators NAMES."""
        hops = getattr(self.torch.ops, "higher_order", None)
        t = getattr(n, "target", None)
        return t is not None and any(t is getattr(hops, name, None)
                                     for name in names)

    def template(self, n):
        """Whether N is flex_attention or its backward, which Inductor
        lowers to a Triton template of its own (its lowerings of the
        higher-order operators, flex_attention and
        flex_attention_backward): the buffers it allocates are the
        template's (flex_forward, flex_backward), and, with one
        configuration in default mode, it is never autotuned."""
        return self._hop(n, "flex_attention", "flex_attention_backward")

    def _configs(self, n, value):
        """How many configurations the Triton kernel that computes node
        n's value (a node, or the value a copy_ writes) leaves
        cached_autotune to benchmark, 1 or 2 (several):
        - a foreach op's kernel (an optimizer step's _foreach_* ops,
          lowered into one ForeachKernel): triton_heuristics.foreach
          gives one configuration but under max-autotune;
        - a pointwise kernel of at most 128 elements (_pointwise_configs);
        - a scatter's kernel: a pointwise one over the elements it
          scatters (_scattered: a tiny index_put into a flex_attention
          block mask's buffer has one), none where Inductor calls
          ATen's."""
        if self.tune_all:
            return 2
        torch = self.torch
        if isinstance(value, torch.fx.Node) and _name(value) in SCATTERS:
            # (a copy_ of a scatter's buffer into an input: a copy)
            m = self._scattered(n) if value is n else _numel_of(n)
            if m is not None:
                return _pointwise_configs(m)
        src = value
        if isinstance(src, torch.fx.Node) and src.target is operator.getitem \
                and src.args and isinstance(src.args[0], torch.fx.Node):
            src = src.args[0]
        if not isinstance(src, torch.fx.Node):
            return 1            # a constant written: a fill kernel
        name = _name(src) or ""
        if name.startswith("_foreach_"):
            return 1
        val = n.meta.get("val") if isinstance(n, torch.fx.Node) else None
        tags = getattr(getattr(src, "target", None), "tags", ()) or ()
        # (select_scatter and slice_scatter lower to a pointwise kernel
        # over their output, as the copies do)
        pointwise = torch.Tag.pointwise in tags or name in (
            "copy_", "copy", "full", "fill", "clone", "_to_copy",
            "select_scatter", "slice_scatter")
        if pointwise and isinstance(val, torch.Tensor):
            # by its size hint, as pointwise()'s size_hints are (the
            # kernel's sizevars.size_hint): int() of a symbolic numel
            # would add a guard pinning it, and the frame Dynamo made
            # dynamic after a size mismatch (automatic_dynamic_shapes)
            # would recompile at every new size until recompile_limit
            m = _numel_of(n)
            if m is not None:
                return _pointwise_configs(m)
        return 2

    def _scattered(self, n):
        """The elements scatter N's Triton kernel iterates over (its
        ir.Scatter's ranges): for index_put and its kin (INDEX_PUTS) the
        indices' broadcast shape times the target's dimensions they
        leave, the values expanded to that (index_put_impl_); for
        scatter, scatter_add and scatter_reduce the index's
        (scatter_reduce_).  0 where Inductor calls ATen's kernel instead
        (index_put_fallback: a boolean index, an accumulation into int64
        or bool; use_scatter_fallback: a reduction other than a sum, an
        int64 or bool source, a sum into int64 or bool; deterministic
        algorithms), the target's elements where a boolean mask and one
        value make it a masked fill (index_put_as_masked_fill's where,
        which is the clone's kernel when there is one); None where
        unknown."""
        torch = self.torch
        name = _name(n)
        vals = torch.fx.node.map_arg(n.args, lambda a: a.meta.get("val"))
        x = vals[0] if vals else None
        if not isinstance(x, torch.Tensor):
            return None
        wide = (torch.int64, torch.bool)
        try:
            if name in INDEX_PUTS:
                k = 2 if name == "_unsafe_masked_index_put_accumulate" \
                    else 1
                idx, values = vals[k], vals[k + 1]
                acc = k == 2 or bool(
                    vals[3] if len(vals) > 3 else
                    n.kwargs.get("accumulate", False))
                tensors = [i for i in idx if isinstance(i, torch.Tensor)]
                if any(i.dtype in (torch.bool, torch.uint8)
                       for i in tensors):
                    if len(idx) == 1 and values.numel() == 1 and \
                            name in INPLACE_SCATTERS:
                        return _numel(x.shape)
                    return 0        # (a functional one's: in the clone's)
                if torch.are_deterministic_algorithms_enabled() or \
                        acc and x.dtype in wide:
                    return 0
                left = [d for i, d in enumerate(x.shape)
                        if i >= len(idx) or idx[i] is None]
                return _numel(torch.broadcast_shapes(
                    *[i.shape for i in tensors])) * _numel(left)
            if name not in ("scatter", "scatter_add", "scatter_reduce"):
                return None
            index = vals[2]
            src = vals[3] if len(vals) > 3 else None
            reduce = vals[4] if len(vals) > 4 else \
                n.kwargs.get("reduce")
            if name == "scatter_add" or reduce == "add":
                reduce = "sum"
            if reduce not in (None, "sum") or \
                    torch.are_deterministic_algorithms_enabled() or \
                    isinstance(src, torch.Tensor) and src.dtype in wide \
                    or reduce == "sum" and x.dtype in wide:
                return 0
            return _numel(index.shape)
        except Exception:       # another signature, a symbolic size
            return None

    def _kernel_keys(self, idx):
        """The key of the Triton kernel each tuned node launches, the same
        for the same kernel.  Inductor's kernel is its source: the wrapper
        defines one kernel for identical sources within a graph
        (TritonScheduling.define_kernel's src_to_kernel: the twelve layers
        of a GPT launch one), and a source is compiled and its autotuner
        made once a process (async_compile.triton's CompiledTritonKernels,
        then check_autotune_cache's best configuration, both keyed by the
        whole source).  The source is what the fused nodes compute (_region)
        and the kernel's name, whose suffix is its position among the
        graph's distinct kernels (the wrapper's next_kernel_suffix): a
        kernel of another graph is the same only where it is the same
        kernel at the same position (a graph compiled again), not the
        forward's kernel met again in the backward."""
        # the source's inductor_meta holds optimize_mem (TritonKernel.
        # codegen_kernel: V.graph.is_inference or V.graph.is_backward), so
        # a training forward's kernel is never an inference graph's or a
        # backward's, whatever it computes (nanoGPT-moe's evaluation then
        # training: the H200 tuned every kernel of both forwards)
        optimize_mem = self.kind != "forward"
        fused = [n for n in self.nodes if n.op == "call_function" and (
            (n in self.buffers and self.base[n] is n and
             not self.extern(n) and not self.part_of_extern(n)) or
            n in self.tuned)]
        pos = {}
        keys = {}
        self.copy_kernel = {}
        for n in fused:
            t = self.copies.get(n)
            if t is not None:
                # the clone of a scatter's target, the kernel before its
                # own: a copy of a stored value (its shape, strides and
                # dtype), or the values inlined into it
                v = t.meta.get("val")
                src = ("clone", self._region(t, idx)
                       if t not in self.realized else None,
                       str(getattr(v, "shape", None)),
                       str(v.stride() if hasattr(v, "stride") else None),
                       str(getattr(v, "dtype", None)))
                if src not in pos:
                    pos[src] = len(pos)
                m = _numel_of(t)
                if self.tune_all or m is None or _pointwise_configs(m) > 1:
                    self.copy_kernel[n] = (pos[src], src, optimize_mem)
            # the values a reduction's kernel computes (a layer norm's
            # output and statistics, the producer fused into it) are one
            # kernel: the reduction's
            red = self._reduction_of(n) if n in self.tuned else None
            src = self._region(red if red is not None else self._root(n),
                               idx)
            if src is None:
                continue        # a view of a stored value: no kernel
            if src not in pos:
                pos[src] = len(pos)
            if n in self.tuned and (self.tune_all or
                                    self._reduction_configs(n) != 1):
                keys[n] = (pos[src], src, optimize_mem)
        return keys

    def _reduction_of(self, n):
        """The reduction whose kernel computes N (memoized), or None: N's
        own (var_mean for its mean), or one whose output or input has
        N's number of elements among the stored values N's kernel reads
        (a layer norm's statistics, the normalized value another kernel
        of the same reduction stored), or a persistent one (_persistent)
        among N's readers whose input has N's elements (the GELU gradient
        a 64-row bias gradient sums; a looped reduction's producer stays
        a kernel of its own, the H200's compile_mlp backward)."""
        memo = self._red
        if n in memo:
            return memo[n]
        memo[n] = None
        torch = self.torch
        root = self._root(n)
        if self._reduces(root):
            memo[n] = root
            return root
        numel = self._iteration(n)
        if numel is None:
            return None
        near = [a for m in self._fused(root)
                for a in m.all_input_nodes if a in self.realized]
        # N's readers, and theirs through the values inlined into them
        # (a token embedding that a layer norm reads summed with the
        # position's)
        readers = []
        stack = list(n.users)
        while stack:
            u = stack.pop(0)
            if u in readers:
                continue
            readers.append(u)
            if u.op == "call_function" and u not in self.realized:
                stack.extend(u.users)
        for a in near + readers:
            r = a.args[0] if a.target is operator.getitem and \
                a.args else a
            if not isinstance(r, torch.fx.Node):
                continue
            if self._reduces(r) and r.all_input_nodes:
                if a in near and numel in (_numel_of(r.all_input_nodes[0]),
                                           _numel_of(a)) or \
                        a not in near and self._persistent(r) and \
                        numel == _numel_of(r.all_input_nodes[0]):
                    memo[n] = r
                    return r
            elif a in near and a.op == "call_function" and \
                    not self.extern(a) and not self.part_of_extern(a) and \
                    self._iteration(a) == numel:
                red = self._reduction_of(a)
                if red is not None:
                    memo[n] = red
                    return red
        return None

    def _iteration(self, n):
        """The elements N's kernel iterates over: a scatter's
        (_scattered, else its largest input but the target), N's own
        otherwise."""
        m = self._scattered(n) if _name(n) in SCATTERS else None
        if m:
            return m
        if _name(n) in SCATTERS and n.args:
            sizes = [_numel_of(a) for a in n.all_input_nodes
                     if a is not n.args[0]]
            sizes = [x for x in sizes if x is not None]
            return max(sizes) if sizes else None
        return _numel_of(n)

    def _unrolled(self, n):
        """Whether N is a reduction Inductor lowers as a pointwise value,
        its reduced elements unrolled (Reduction.create: fewer than
        config.unroll_reductions_threshold, 8): neither stored
        (make_reduction realizes only a reduction that stays one) nor
        a reduction's kernel (the nanoGPT backward's sum of the position
        gradient over a batch of 4)."""
        if _name(n) not in CONFIG_REDUCTIONS:
            return False
        from torch._inductor import config
        shape = self._reduction_shape(n)
        return bool(shape) and shape[2] < config.unroll_reductions_threshold

    def _reduces(self, n):
        """Whether N is a reduction Inductor keeps as one."""
        return _name(n) in CONFIG_REDUCTIONS and not self._unrolled(n)

    def _persistent(self, red):
        """Whether Inductor makes RED a persistent reduction (the whole
        reduced extent in one block: choices.py's
        should_use_persistent_reduction, up to 1,024 elements for an
        inner one and 64 for others)."""
        shape = self._reduction_shape(red)
        return bool(shape) and shape[2] <= (1024 if shape[0] else 64)

    def _reduction_configs(self, n):
        """How many configurations the kernel that computes N has when it
        is a reduction's (None when it is not; _reduction_of says which:
        the scheduler fuses a pointwise consumer into the reduction's
        kernel, a layer norm's output with its statistics, and a
        producer into a persistent one).  Inductor's reduction heuristics
        (_reduction_configs, _persistent_reduction_configs) give one
        configuration to a reduction along the contiguous last dimension
        (ReductionHint.INNER) and to one along the outer dimensions
        (OUTER), but to a persistent inner reduction of fewer than 256
        elements (a rounded power of two; persistent up to 1,024), which
        has one per row block of 1, 8, 32 and 128 rows within 4,096
        elements and the rows there are."""
        red = self._reduction_of(n)
        shape = red is not None and self._reduction_shape(red)
        if not shape:
            return None
        inner, outer, r, xs = shape
        if not inner and not outer:
            return 2            # ReductionHint.DEFAULT: several
        if not inner:
            return 1
        return _inner_configs(r, xs)

    def _reduction_shape(self, red):
        """(inner, outer, reduced elements, rows) of the reduction RED:
        inner when it reduces the contiguous last dimensions
        (ReductionHint.INNER), outer when it keeps the last one (OUTER);
        None where its input is not known."""
        torch = self.torch
        x = red.all_input_nodes[0].meta.get("val") \
            if red.all_input_nodes else None
        if not isinstance(x, torch.Tensor) or x.dim() == 0:
            return None
        dims = red.args[1] if len(red.args) > 1 else \
            red.kwargs.get("dim")
        if dims is None or dims == []:
            dims = list(range(x.dim()))
        if isinstance(dims, int):
            dims = [dims]
        try:
            dims = sorted(d % x.dim() for d in dims)
            shape = [_hint(d) for d in x.shape]
            stride = [_hint(d) for d in x.stride()]
        except Exception:
            return None
        r = 1
        for d in dims:
            r *= shape[d]
        xs = max(1, _numel(shape) // max(r, 1))
        inner = dims == list(range(x.dim() - len(dims), x.dim())) and \
            stride[-1] == 1
        outer = x.dim() - 1 not in dims
        return inner, outer, r, xs

    def _realized(self):
        """The nodes whose value Inductor's lowering stores (a buffer a
        kernel writes and the next reads) rather than inlining it into
        its readers, as far as a kernel's source depends on it: the
        buffers above, graph inputs, extern kernels' outputs; every
        reduction (make_reduction realizes its result) and scatter; and
        a pointwise value read by several nodes whose inlined loads
        exceed config.realize_reads_threshold (StorageBox.mark_reuse,
        should_realize_on_reuse), or by any whose loads exceed
        realize_acc_reads_threshold (has_exceeded_max_reads)."""
        from torch._inductor import config
        many = config.realize_reads_threshold
        acc = _acc_reads_threshold()
        realized = set()
        reads = {}
        for n in self.nodes:
            name = _name(n)
            if n.op != "call_function" or n in self.buffers or \
                    self.extern(n) or self.part_of_extern(n) or \
                    (name in REDUCTIONS and not self._unrolled(n)) or (
                        n.target is operator.getitem and
                        n.args[0] in realized):
                realized.add(n)
                continue
            r = set()
            for a in n.all_input_nodes:
                r |= {a} if a in realized else reads.get(a, set())
            users = len(n.users)
            if (users > 1 and len(r) > many) or len(r) > acc:
                realized.add(n)
            else:
                reads[n] = r
        return realized

    def _across_reduction(self):
        """The values Inductor stores (_realized) that a full reduction
        (to one element: an fp8 scaling's amax over a whole gradient)
        reads and that another kernel reads after it with the
        reduction's result: the scheduler cannot fuse a kernel with the
        reduction whose result it waits for, so the value is stored
        between them (nanochat's fp8 lm_head backward on the H200: the
        float32 gradient, 512 MiB, then its e5m2 copy scaled by its amax).
        A row reduction fuses with its readers (a softmax's kernel): no
        buffer there."""
        realized = self.realized
        extra = set()
        for n in self.nodes:
            if n.op != "call_function" or n not in realized or \
                    n in self.buffers or len(n.users) < 2 or \
                    self.extern(n) or self.part_of_extern(n) or \
                    _name(n) in REDUCTIONS or (_numel_of(n) or 0) <= 1:
                continue
            # the full reductions that read N, through the values inlined
            # into them
            reds = set()
            stack, seen = list(n.users), set()
            while stack:
                m = stack.pop()
                if m in seen:
                    continue
                seen.add(m)
                if m in realized:
                    if _name(m) in REDUCTIONS and _numel_of(m) == 1:
                        reds.add(m)
                    continue
                stack.extend(m.users)
            if not reds:
                continue
            for u in n.users:
                loads = {a for m in self._fused(u) for a in m.all_input_nodes}
                if loads & reds:
                    extra.add(n)
                    break
        return extra

    def _root(self, n):
        """The node whose kernel computes N: a reduction's for one of its
        outputs (var_mean's mean), N's own otherwise."""
        if n.target is operator.getitem and n.args and \
                n.args[0] in self.realized and \
                n.args[0].op == "call_function" and \
                not self.extern(n.args[0]):
            return n.args[0]
        return n

    def _fused(self, root):
        """ROOT and the nodes inlined into its kernel: back from it to
        the values Inductor stores (_realized); a dict in the order
        found, not a set (a node hashes by its address), so that what
        iterates it (_reduction_of's first match) is the same each run."""
        region = {}
        stack = [root]
        while stack:
            m = stack.pop()
            if m in region:
                continue
            region[m] = None
            for a in m.all_input_nodes:
                if a not in self.realized:
                    stack.append(a)
        return region

    def _region(self, root, idx):
        """What the kernel that computes ROOT's value is made of: the
        nodes fused into it (back from ROOT to the buffers, graph inputs
        and extern kernels' outputs it reads), each by its op, its
        constant arguments and its value's shape, strides and dtype, the
        inputs numbered by first use; never a node's name.  None where
        nothing is computed (a view or an output of a stored value, as
        the q, k, v of a split that an attention kernel reads)."""
        torch = self.torch
        region = self._fused(root)
        local = {}
        inputs = {}

        def meta(v):
            if isinstance(v, torch.Tensor):
                try:
                    flat = all(isinstance(d, int) for d in v.shape) and \
                        v.is_contiguous()
                except Exception:
                    flat = False
                if flat:
                    # a contiguous tensor is one loop of its elements
                    # (the scheduler's simplify_loops merges its
                    # dimensions): the bf16 copies of a (3072, 768) and
                    # a (768, 3072) weight are one kernel
                    return ("t", (str(v.numel()),), str(v.dtype),
                            v.device.type)
                return ("t", tuple(str(d) for d in v.shape),
                        tuple(str(d) for d in v.stride()), str(v.dtype),
                        v.device.type)
            if isinstance(v, (tuple, list)):
                return tuple(meta(x) for x in v)
            return str(v)

        def arg(a):
            if isinstance(a, torch.fx.Node):
                if a in local:
                    return ("n", local[a])
                if a not in inputs:
                    inputs[a] = (len(inputs), meta(a.meta.get("val")))
                return ("in",) + inputs[a]
            if isinstance(a, (tuple, list)):
                return tuple(arg(x) for x in a)
            if isinstance(a, dict):
                return tuple(sorted((k, arg(v)) for k, v in a.items()))
            return repr(a)

        if all(_is_view(m) or m.target is operator.getitem
               for m in region):
            return None
        out = []
        for m in sorted(region, key=idx.get):
            out.append((str(m.target), arg(m.args), arg(m.kwargs),
                        meta(m.meta.get("val"))))
            local[m] = len(local)
        return tuple(out)

    def part_of_extern(self, n):
        """An output of an extern kernel taken from its tuple (getitem):
        the kernel made what it makes, under the recorder (the efficient
        attention's RNG seed and offset are CPU tensors, for one)."""
        return n.target is operator.getitem and n.args and \
            isinstance(n.args[0], self.torch.fx.Node) and \
            self.extern(n.args[0])

    def __call__(self, args):
        if self.calls == 0:
            # The compile that made this graph can leave the program's
            # own objects in reference cycles: TorchDynamo's variable
            # trackers of a frame traced to a graph break hold its
            # values (transformers' model output, whose loss logs a
            # warning in the compiled forward: the first step's logits).
            # Python's cyclic collector frees them when it next runs,
            # which a real run's compile, making far more objects than
            # the recorder's, brings soon (on the H200, within the
            # step); here it may not run for the rest of the program.
            # Collected before the graph first runs, they are freed as
            # there.
            import gc
            gc.collect()
        stack = self.rec.module_stack
        if self.owner is not None:
            stack.append(self.owner)
        try:
            if not self.cudagraphs:
                return self.run(args)
            return self.graphed(args)
        finally:
            if self.owner is not None and stack and stack[-1] is self.owner:
                stack.pop()

    def graphed(self, args):
        """mode="reduce-overhead": cudagraph trees (CUDAGraphTreeManager).
        The first call warms up: the program runs with its allocations in
        the tree's private pool, on the tree's stream (a pool_begin /
        pool_end / pool_release, _use_cuda_memory_pool_manager).  The
        second records: torch.cuda.graph() empties the cache first, the
        inputs that are not parameters are copied to static buffers in
        the pool, then the capture allocates in the pool as the program
        runs; its blocks stay the pool's.  Later calls replay the graph:
        copies into the static inputs, no allocation.  While the tree's
        path is warming up, every graphed call warms up too, the
        second call of a graph as well (CUDAGraphTreeManager._run's
        in_warmup), until a new generation starts or the path's outputs
        are all dead (Runtime.in_warmup): a program that called
        cudagraph_mark_step_begin() once and never again stays in one
        generation, and each of its graphs runs eagerly in the pool for
        as long as the path's outputs live (LightGlue's compiled layers,
        whose outputs the autograd graph of the matcher's result keeps:
        nine warm-ups a match, none recorded).  Each warm-up and
        capture runs inside clear_cublas_manager(), which calls
        torch._C._cuda_clearCublasWorkspaces() on entry and on exit: every
        cuBLAS and cuBLASLt workspace of the process is freed (all
        handles and streams, the eager stream's too), so the warm-up or
        capture makes its own in the pool and the next eager GEMM a new
        one (Recorder.clear_blas_workspaces)."""
        rt = self.rt
        rec = self.rec
        rt.tree_call(self.kind)
        n = 0 if self.calls == 0 or rt.in_warmup() else \
            (1 if self.static is None else 2)
        if n >= 2:
            with rt.quiet():
                out = self.run(args, record=False)
            rt.static_outputs(out)
            rt.graph_outputs(out)
            rt.tree_path((), "execution", self.kind, ())
            return out
        before = set(rec.live)
        with rt.on_graph_stream():
            rec.clear_blas_workspaces()
            if n == 1:
                rec.empty_cache()
                rt.pool("pool_begin")
                self.static = rt.static_copies(args)
                rt.pool("pool_end")
                rt.pool("pool_release")
            rt.pool("pool_begin")
            try:
                out = self.run(args)
                rt.graph_outputs(out)
                rt.tree_path(out, "recording" if n == 1 else "warmup",
                             self.kind, before)
                return out
            finally:
                rt.pool("pool_end")
                if n == 0:
                    rt.pool("pool_release")
                rec.clear_blas_workspaces()

    def run(self, args, record=True):
        torch = self.torch
        rt = self.rt
        env = {}
        placeholders = [n for n in self.nodes if n.op == "placeholder"]
        for n, a in zip(placeholders, args):
            env[n] = a
        # the gradients a backward graph is given stay alive until it
        # returns: the autograd engine's call holds them (PyNode::apply's
        # argument tuple, CompiledFunction.backward's *flat_args), and
        # the graph's "del tangents_1" drops its own reference only
        held = [a for n, a in zip(placeholders, args)
                if self.kind == "backward" and n.name.startswith("tangents")]
        args.clear()
        result = None
        kept = {}       # freed buffers held for their reuse (_plan_reuse)
        self.calls += 1
        for i, n in enumerate(self.nodes):
            if n.op == "placeholder":
                pass
            elif n.op == "output":
                result = torch.fx.node.map_arg(n.args[0], lambda x: env[x])
            elif n.op == "get_attr":
                env[n] = getattr(self.gm, n.target)
            else:
                a, k = torch.fx.node.map_arg((n.args, n.kwargs),
                                             lambda x: env[x])
                if n.op == "call_function" and self.template(n) and record:
                    with rt.quiet():
                        env[n] = n.target(*a, **k)
                    if n.target is torch.ops.higher_order.flex_attention:
                        self.flex_forward(n, env[n])
                    else:
                        self.flex_backward(n, env[n], a)
                elif n.op == "call_function" and self.extern(n) and record:
                    d = kept.pop(self.reuse_of.get(n), None)
                    if d is not None:
                        # out= the freed buffer's memory
                        self._release(d)
                    d = None
                    env[n] = self._extern_call(n, a, k)  # recorded
                else:
                    fn = n.target if n.op == "call_function" else \
                        getattr(self.gm, n.target)
                    with rt.quiet():
                        v = fn(*a, **k)
                        if n.op == "call_function":
                            self._values(n.target, a, k, v)
                    if v is None and _writes_first(n):
                        # an op Inductor's reinplacing pass made in place
                        # (_foreach_add -> _foreach_add_, whose inputs a
                        # copy_ would overwrite): its value is what it
                        # wrote, as its lowering returns it (the getitems
                        # of a foreach op read it)
                        v = a[0]
                    env[n] = v
                    reuse = None
                    if n in self.buffers and self.base[n] is n and \
                            record and not self.part_of_extern(n):
                        reuse = self.inplace(n, env, i)
                        if reuse not in self.rec.live:
                            reuse = None    # an inlined value: no buffer
                        d = kept.pop(self.reuse_of.get(n), None)
                        rt.buffer(v, reuse if d is None else
                                  id(d.untyped_storage()))
                        d = None
                    f = self.fills.get(n)
                    if f is not None and f in self.kernel and record:
                        rt.flush(self.kernel[f], (), self.kind)
                    if n in self.copy_kernel and record:
                        rt.flush(self.copy_kernel[n], (), self.kind)
                    if n in self.kernel and record and \
                            n not in self.fill_nodes:
                        rt.flush(self.kernel[n],
                                 self.mutated(n, v, a, reuse), self.kind)
            for b in self.frees.get(i, ()):
                d = env.pop(b, None)
                if b in self.reused and record:
                    kept[b] = d     # until the buffer that reuses it
                d = None
                # views of b die with it (their own last use is b's)
            for m in list(env):
                if self.base[m] is not m and self.base[m] not in env:
                    del env[m]
        # the graph's own references go first (the wrapper's last
        # "del"s), then the engine's
        a = k = v = None
        del held
        return result

    def _values(self, func, args, kwargs, out):
        """What a fused node FUNC(*ARGS, **KWARGS) -> OUT makes known of
        values (known.Known.after, values.py's shadows and ranges), as
        the recorder's dispatch notes it of every op it runs: the fused
        nodes run beside it (Runtime.quiet), and their outputs' values
        were unknown to the program's eager ops after the graph.
        st-moe-pytorch's and mixture-of-experts' safe_one_hot,
        max(indexes.max() + 1 + 1, capacity): TorchDynamo makes the
        builtin max of a tensor and an int a clamp(min=capacity) in the
        graph, which the graph returns and F.one_hot(num_classes=) reads
        after a graph break; with the clamp's range [capacity, inf) (and
        the routing's shadows up to it) that read is the capacity, as in
        eager (Known.answered), not --item-int's 1.  Extern kernels run
        under the recorder and are noted there; writes of in-place nodes
        forget what was known of the storages written."""
        torch = self.torch
        kn = getattr(self.rec, "known", None)
        if kn is None or not isinstance(func, torch._ops.OpOverload):
            return
        if func is torch.ops.prims.convert_element_type.default and \
                len(args) == 2:
            # (Inductor's decomposition of a cast: _to_copy's)
            func, args, kwargs = torch.ops.aten._to_copy.default, \
                args[:1], {"dtype": args[1]}
        kn.after(func, func.overloadpacket.__name__, args, kwargs, out)

    def _release(self, t):
        """Frees T's buffer now (the wrapper's "del buf" after the
        kernel), not when its fake storage dies."""
        key = id(t.untyped_storage())
        if key in self.rec.live:
            self.rec.free(key)
            self.rec.retired.add(key)

    def _temporary(self, nbytes):
        """A buffer of NBYTES that no value of the graph is: its key."""
        key = object()
        if nbytes:
            self.rec.alloc(nbytes, self.rec.category("compiled"),
                           self.rec.site(), key)
        return key

    def flex_forward(self, n, v):
        """Inductor's lowering of flex_attention (the Triton template's,
        flex_attention in Inductor's kernel/flex): the log-sum-exp and
        the max scores, [B, Hq, Lq] in fp32 whatever the inputs' dtype
        (empty_strided, each a buffer of its own, which the template
        writes: its mutated_inputs), then the template's own output,
        [B, Hq, Lq, Dv] in the query's dtype, in that order; a buffer no
        getitem of the graph reads (the max scores unless the program
        asked for them, the log-sum-exp of an inference graph) is freed
        after the kernel.  The block mask's full blocks, when it has
        none, are empty(0): no block."""
        rt = self.rt
        out, lse, mx = v[:3]
        for t in (lse, mx, out):
            rt.buffer(t, None)
        used = {u.args[1] for u in n.users
                if u.target is operator.getitem}
        for i, t in enumerate((out, lse, mx)):
            if i not in used:
                self._release(t)

    def flex_backward(self, n, v, a):
        """Inductor's lowering of flex_attention_backward (the Triton
        template flex_attention_backward), in the order the generated
        code allocates:
        - for each captured tensor the score_mod takes a gradient for,
          an fp32 buffer of its shape, zeroed by a fill kernel
          (zeros_and_scatter's lowering accumulates in fp32);
        - delta, sum(out * grad_out, -1) in fp32, [B, Hq, Lq]: a
          persistent inner reduction over Dv, autotuned as any
          (_inner_configs); with fp32 inputs the sum's buffer is
          converted in place, a buffer the autotuner clones;
        - grad_query (the query's shape and dtype) and the value's
          gradient, both empty_strided, then the template's output, the
          key's gradient ([Bq, Hkv, Lkv, D]: with a key batch of 1
          broadcast over the query's, both are summed over the batch
          into buffers of the key's and value's shape after the kernel
          and the [Bq, ...] ones freed);
        - delta is freed after the kernel; a captured gradient not in
          fp32 is cast into a buffer of its dtype and the fp32 one
          freed."""
        torch = self.torch
        rt = self.rt
        rec = self.rec
        q, out = a[0], a[3]
        gq, gk, gv = v[:3]
        caps = [g for g in (v[3] if len(v) > 3 else ())
                if isinstance(g, torch.Tensor)]
        zeros = []
        for g in caps:
            if g.dtype == torch.float32:
                rt.buffer(g, None)
                key = None
            else:
                key = self._temporary(g.numel() * 4)
            zeros.append(key)
            if not self.tune_all and g.numel() <= 128:
                continue            # one configuration (_configs)
            rt.flush(("flex_attention_backward zeros", tuple(g.shape)),
                     (), self.kind)
        rows = _numel(out.shape[:-1])
        dv = _hint(out.shape[-1])
        nb = rows * 4
        delta = self._temporary(nb)
        if self.tune_all or _inner_configs(dv, rows) > 1:
            rt.flush(("flex_attention_backward delta", tuple(out.shape),
                      str(out.dtype)),
                     (nb,) if out.dtype == torch.float32 else (),
                     self.kind)
        rt.buffer(gq, None)
        bq = _hint(q.shape[0])
        if _hint(gk.shape[0]) == bq:
            rt.buffer(gv, None)
            rt.buffer(gk, None)
            rec.free(delta)
        else:
            part = [self._temporary(bq * _numel(g.shape[1:]) *
                                    g.element_size()) for g in (gv, gk)]
            rec.free(delta)
            rt.buffer(gk, None)
            rt.buffer(gv, None)
            for key in part:
                rec.free(key)
        for g, key in zip(caps, zeros):
            if key is not None:
                rt.buffer(g, None)
                rec.free(key)

    def mutated(self, n, v, a, reuse):
        """The bytes of each buffer N's kernel writes that it also reads
        or that is not its own (Inductor's mutated_arg_names: an
        in_out_ptr written in place, a scatter's buffer, a graph input a
        copy_ writes), which the autotuner clones around each run it
        times (CachingAutotuner.maybe_clone_args)."""
        torch = self.torch

        def nbytes(t):
            return t.untyped_storage().nbytes() \
                if isinstance(t, torch.Tensor) else 0
        if _name(n) == "copy_" and a and isinstance(a[0], torch.Tensor):
            return (nbytes(a[0]),)
        if reuse is not None or _name(n) in SCATTERS:
            return (nbytes(v),)
        return ()

    def inplace(self, n, env, i):
        """The key of the input buffer N's kernel writes in place
        (_plan_inplace's inplace_of), while it is alive; None if there is
        none."""
        torch = self.torch
        b = self.inplace_of.get(n)
        if b is None or b not in env:
            return None
        t, v = env[b], env[n]
        if isinstance(t, torch.Tensor) and isinstance(v, torch.Tensor) and \
                t.dtype == v.dtype and \
                t.untyped_storage().nbytes() == v.untyped_storage().nbytes():
            return id(t.untyped_storage())
        return None

    def _storage_nbytes(self, n):
        """The storage bytes of N's value (symbolic under dynamic
        shapes), or None where it is not a tensor with a storage."""
        v = n.meta.get("val")
        if not isinstance(v, self.torch.Tensor):
            return None
        try:
            return v.untyped_storage().nbytes()
        except Exception:
            return None

    def _reuse_key(self, n):
        """Inductor's buffer_reuse_key of N's value: its dtype and its
        storage's size (the device is the GPU), or None."""
        nb = self._storage_nbytes(n)
        if nb is None:
            return None
        # symbolic under dynamic shapes: s0 is not s1 though their hints
        # agree (sympy_str of the size)
        return (str(n.meta["val"].dtype), str(nb))

    def _stored(self, b):
        """Whether a kernel may write B's buffer in place: a buffer this
        graph made (a fused kernel's or an extern kernel's output, not a
        template's), or, in a backward graph, a saved activation that
        AOTAutograd donates to it (donated_buffer, bw_donated_idxs: no
        other alias of it lives; Inductor's DonatedBuffer): the logits'
        gradient written over the saved logits."""
        if b.op == "placeholder":
            return b in self.donated
        return b.op == "call_function" and self.base[b] is b and \
            not self.template(b) and _name(b) not in SCATTERS and (
                b in self.buffers or self.extern(b) or
                self.part_of_extern(b))

    def _fused_buffer(self, n):
        return n.op == "call_function" and n in self.buffers and \
            self.base[n] is n and not self.extern(n) and \
            not self.part_of_extern(n)

    def _inplace_at(self, n, i):
        """The buffer N's kernel can write in place: one it reads (through
        the values fused into it) for the last time, made by this graph,
        of N's dtype and storage size (the scheduler's
        decide_inplace_update: a read whose buffer has no other user
        left and the same buffer_reuse_key); None if there is none."""
        key = self._reuse_key(n)
        if key is None:
            return None
        region = self._fused(self._root(n))
        for a in [a for m in region for a in m.all_input_nodes
                  if a not in region]:
            b = self.base[a]
            if self.last.get(b) == i and self._stored(b) and \
                    self._reuse_key(b) == key:
                return b
        return None

    def _plan_inplace(self, nodes):
        """inplace_of: each fused kernel that writes in place an input it
        reads for the last time (_inplace_at) -> that input, over the
        graph in order (an input written in place is not there for a
        later kernel)."""
        self.inplace_of = {}
        done = set()
        for i, n in enumerate(nodes):
            if self._fused_buffer(n):
                b = self._inplace_at(n, i)
                if b is not None and b not in done:
                    self.inplace_of[n] = b
                    done.add(b)

    # the extern kernels whose output the wrapper allocates
    # (ExternKernelOut: extern_kernels.mm(..., out=buf)); the others
    # (convolution, attention, sort) allocate their own
    _EXTERN_OUT = {"mm", "addmm", "bmm", "baddbmm", "_int_mm"}

    def _extern_call(self, n, a, k):
        """Extern kernel N's call on arguments A, K as the wrapper makes
        it: an ExternKernelOut's buffer allocated (empty_strided,
        contiguous, its dtype the graph's), then the out= overload into it
        (extern_kernels.mm(mat1, mat2, out=buf) runs aten::mm.out); the
        others by their own overload.  A dispatch mode the program runs
        the compiled code under sees the op the GPU's run has:
        selective activation checkpointing's policy picks by overload
        (torchtitan's saves aten.mm.default's outputs, and a compiled
        region inside its checkpoint, whose GEMMs are mm.out, has its
        mm outputs recomputed, not held to the backward)."""
        torch = self.torch
        t = n.target
        if self.rng_wrapped(n):
            return a[0](*a[1:], **{key: v for key, v in k.items()
                                   if key != "rng_state"})
        out = getattr(getattr(t, "overloadpacket", None), "out", None)
        val = n.meta.get("val")
        name = _name(n)
        if name not in self._EXTERN_OUT or out is None or \
                not isinstance(val, torch.Tensor) or k:
            return t(*a, **k)
        x, y = (a[0], a[1]) if name in ("mm", "bmm", "_int_mm") else \
            (a[1], a[2])
        from torch._prims_common import make_contiguous_strides_for
        shape = tuple(x.shape[:-1]) + (y.shape[-1],)
        # (the wrapper's empty_strided_cuda)
        buf = torch.empty_strided(shape, make_contiguous_strides_for(shape),
                                  dtype=val.dtype, device=x.device)
        return out(*a, out=buf)

    def _nbytes(self, n):
        """N's storage bytes, a symbolic size by its hint (the estimate's
        optimization_hint); 0 for no storage."""
        nb = self._storage_nbytes(n)
        return 0 if nb is None else _hint(nb)

    def _plan_reuse(self, nodes, idx):
        """reuse_of: each buffer the wrapper allocates (a fused kernel's
        output, an ExternKernelOut's) that takes the memory of a buffer
        freed before it instead (memory_plan_reuse: a FreeIfNotReusedLine
        pushes the freed buffer into the pool of its buffer_reuse_key,
        the dtype and storage size; a later AllocateLine of that key
        pops the last one pushed, "buf9 = buf4; del buf4  # reuse").
        The freed buffer is then held from its last use to the reuse.
        AllocateLine.should_reuse_buffer takes it only if that does not
        raise the graph's estimated peak: always from the kernel just
        before, else when its size plus the estimate's largest live
        memory between the two kernels stays within the estimate's peak
        (EfficientPeakEstimate over estimate_peak_memory's timeline:
        each buffer from the kernel that makes it to the last that reads
        it, the graph inputs from the start, the outputs to the end).
        Graph inputs are freed, never reused (codegen_free's
        InputBuffer); buffers another kernel writes in place are not
        freed (_plan_inplace)."""
        self.reuse_of = {}
        self.reused = set()
        torch = self.torch
        # steps: the kernels, in the graph's order
        step, s = {}, -1
        for n in nodes:
            if n.op == "call_function" and self.base[n] is n and (
                    n in self.buffers or self.extern(n)):
                s += 1
            step[n] = max(s, 0)
        nsteps = s + 2
        out = self.outputs
        mem = [0] * (nsteps + 1)

        def live(b, start):
            nb = self._nbytes(b)
            mem[start] += nb
            if b not in out and b in self.last:
                mem[step[nodes[self.last[b]]] + 1] -= nb
        donors = set(self.inplace_of.values())
        made = set()    # the buffers this graph's kernels make
        for n in nodes:
            if n.op == "placeholder" and n in self.last:
                live(n, 0)
            elif n.op == "call_function" and self.base[n] is n and \
                    n not in self.inplace_of and \
                    isinstance(n.meta.get("val"), torch.Tensor) and (
                        n in self.buffers or self.extern(n) or
                        self.part_of_extern(n)):
                live(n, step[n])
                made.add(n)
        for i in range(1, len(mem)):
            mem[i] += mem[i - 1]
        peak = max(mem)
        pool = {}
        for i, n in enumerate(nodes):
            if n in made and n not in self.inplace_of and (
                    self._fused_buffer(n) or _name(n) in self._EXTERN_OUT):
                key = self._reuse_key(n)
                free = pool.get(key)
                if free:
                    b = free.pop()
                    a, z = step[nodes[self.last[b]]] + 1, step[n]
                    nb = self._nbytes(n)
                    # freed by the kernel just before (a == z), or held
                    # below the estimated peak
                    if a >= z or nb + max(mem[a:z]) <= peak:
                        self.reuse_of[n] = b
                        self.reused.add(b)
                        for t in range(a, z):
                            mem[t] += nb
                    else:
                        free.append(b)
            for b in sorted(self.frees.get(i, ()), key=idx.get):
                if b in made and b not in out and b not in donors:
                    pool.setdefault(self._reuse_key(b), []).append(b)


class Runtime:
    """What the programs share: the recorder, the fake mode, the weak
    references that free a buffer when its storage dies."""

    def __init__(self, torch, rec):
        self.torch = torch
        self.rec = rec
        self.refs = {}
        self.tuned = set()     # the kernels autotuned (Runtime.flush)
        self.reset_trees()

    def reset_trees(self):
        """Cudagraph trees' state, as a new recording has it and as
        reset_cudagraph_trees leaves it (torch._dynamo.reset): the
        generation of the path (Runtime.tree_call), whether a forward's
        backward is pending, the user's cudagraph_mark_step_begin() count
        (MarkStepBox), the path's state and the storages of its warm-up
        and capture outputs, the storages in the tree (graph_outputs),
        and the tree's pool (Runtime.pool): none taken yet, a tree new
        at the next graphed call."""
        self.tree_gen = None
        self.pending = False
        self.marks = 0
        self.path_state = None
        self.path = {}
        self.in_tree = {}
        self.pool_held = False
        self.pool_key = None

    @functools.cached_property
    def _disable(self):
        from torch.utils._python_dispatch import _disable_current_modes
        return _disable_current_modes

    def quiet(self):
        """Ops run on the fake tensors with nothing recorded (the recorder's
        dispatch mode set aside, the fake mode kept)."""
        import contextlib
        from torch._guards import detect_fake_mode

        @contextlib.contextmanager
        def cm():
            fm = detect_fake_mode()
            with self._disable():
                with (fm if fm is not None else contextlib.nullcontext()):
                    yield
        return cm()

    def buffer(self, v, reuse):
        """A buffer for V (a fused kernel's output), or V written in place
        of the buffer REUSE (a storage key)."""
        torch = self.torch
        rec = self.rec
        for t in (v if isinstance(v, (tuple, list)) else (v,)):
            if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
                continue
            s = t.untyped_storage()
            key = id(s)
            if key in rec.live:
                continue
            if reuse is not None and reuse in rec.live:
                # the input's block becomes the output's
                rec.free(reuse)
                rec.retired.add(reuse)
                reuse = None
            nb = s.nbytes()
            if nb == 0:
                continue
            rec.alloc(nb, rec.category("compiled"), rec.site(), key)
            self.refs[key] = weakref.ref(s, self._death(key))

    def pool(self, action):
        from . import fake
        if not self.pool_held:
            # the tree's own reference to its pool (graph_pool_handle(),
            # held by CUDAGraphTreeManager as long as the tree): an empty
            # capture, `with torch.cuda.graph(...): pass`, whose __enter__
            # empties the cache first, then a begin and an end with
            # nothing between, as on the H200
            self.pool_held = True
            self.rec.empty_cache()
            self.pool("pool_begin")
            self.pool("pool_end")
        if self.pool_key is None:
            # graph_pool_handle(): the tree's pool, numbered with the
            # program's own pools (graphs.py) by first use
            self.pool_key = self.rec.pool_handle()
        self.rec.pool_row(action, self.pool_key,
                          stream=fake._CURRENT_STREAM[0])

    def generation(self):
        """CUDAGraphTreeManager.get_curr_generation: the user's mark-step
        count once there is one, else Dynamo's GenerationTracker, which
        each call of a compiled function advances."""
        if self.marks:
            return self.marks
        from torch._dynamo.mutation_guard import GenerationTracker
        return GenerationTracker.generation

    def tree_call(self, kind):
        """A graphed program called (CUDAGraphTreeManager._run): in a new
        torch.compile invocation with no forward's backward pending
        (can_start_new_generation), a path warming up or recording ends
        (try_end_curr_warmup, try_end_curr_recording) and
        dealloc_current_path_weakrefs frees the storages of its outputs
        that are still alive (torch._C._free_And_Remove_DeleterFn: a
        later read of them is the "overwritten by a subsequent run"
        error), though Python still holds them.  A replay's outputs are
        not the allocator's (static_outputs): nothing to free."""
        if self.tree_gen == self.generation() or \
                (self.pending and not self.marks):
            return
        if self.path_state in ("warmup", "recording"):
            rec = self.rec
            for key, ref in self.path.items():
                if ref() is not None and key in rec.live:
                    rec.free(key)
                    rec.retired.add(key)
        self.path = {}
        self.path_state = None

    def in_warmup(self):
        """Whether the tree's path is warming up (CUDAGraphTreeManager's
        in_warmup after try_end_curr_warmup): it was, in this generation
        (tree_call ends it in a new one), and an output of its warm-ups
        is still alive (CUDAWarmupNode.all_outputs_are_dead, over the
        path's outputs); once all are dead the path ends."""
        if self.path_state != "warmup":
            return False
        if any(ref() is not None and key in self.rec.live
               for key, ref in self.path.items()):
            return True
        self.path = {}
        self.path_state = None
        return False

    def tree_path(self, out, state, kind, before):
        """After a graphed call: the path's STATE (warmup, recording,
        execution), its generation (update_generation), the outputs the
        warm-up or capture allocated in the pool (not BEFORE it, the keys
        live then: a parameter or an input a forward returns for its
        backward is no output of the pool, _is_cuda_graph_recorded_tensor),
        and a forward's backward pending (CUDAGraphTreeManager.run, by
        the compilation mode)."""
        torch = self.torch
        self.path_state = state
        self.tree_gen = self.generation()
        if kind != "inference":
            self.pending = kind == "forward"
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(t, torch.Tensor) and t.device.type == "cuda":
                s = t.untyped_storage()
                if id(s) in self.rec.live and id(s) not in before:
                    self.path[id(s)] = weakref.ref(s)

    def on_graph_stream(self):
        """The cudagraph trees' own stream (CUDAGraphTreeManager.stream),
        current while a graph warms up, records or replays."""
        torch = self.torch
        if getattr(self, "stream", None) is None:
            self.stream = torch.cuda.Stream()
        return torch.cuda.stream(self.stream)

    @staticmethod
    def thread():
        import threading
        return threading.get_ident()

    def graph_outputs(self, out):
        """Note the outputs of a graphed program: in the tree's memory,
        a later graph takes them as static inputs (the forward's saved
        activations in the backward)."""
        torch = self.torch
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(t, torch.Tensor) and t.device.type == "cuda":
                s = t.untyped_storage()
                self.in_tree[id(s)] = weakref.ref(s)

    def static_copies(self, args):
        """The static inputs of a recorded graph: a copy of each CUDA
        tensor argument that is neither a parameter nor an output of a
        graph of the tree (its strided extent, as the input is), kept as
        long as the graph."""
        torch = self.torch
        rec = self.rec
        keys = []
        tree = self.in_tree
        for a in args:
            if not isinstance(a, torch.Tensor) or \
                    isinstance(a, torch.nn.Parameter) or \
                    a.device.type != "cuda" or a.numel() == 0:
                continue
            r = tree.get(id(a.untyped_storage()))
            if r is not None and r() is a.untyped_storage():
                continue
            span = 1 + sum((int(d) - 1) * int(st)
                           for d, st in zip(a.shape, a.stride()))
            key = object()
            rec.alloc(span * a.element_size(), "input",
                      "cudagraph static input", key)
            keys.append(key)
        return keys

    def static_outputs(self, out):
        """A replay's outputs live in the graph's memory, which the
        allocator does not see again: none of the recorder's ops on them
        (a view, a .grad) allocates their storage."""
        torch = self.torch
        rec = self.rec
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(t, torch.Tensor) and t.device.type == "cuda":
                s = t.untyped_storage()
                key = id(s)
                if key not in rec.live and key not in rec.retired:
                    rec.retired.add(key)
                    self.refs[key] = weakref.ref(s, self._unretire(key))

    def _unretire(self, key):
        def cb(_ref):
            self.refs.pop(key, None)
            self.rec.retired.discard(key)
        return cb

    def flush(self, kernel, clones=(), kind="forward"):
        """Triton's autotuner at the first launch of KERNEL (a key of
        Program._kernel_keys) in the process: benchmark_gpu's L2 flush
        buffer, allocated and freed around the benchmark runs, and the
        copies of the buffers the kernel mutates (CLONES, their bytes),
        made for each run (CachingAutotuner.bench's kernel_call): the
        warm-up run before the flush buffer, then the timed ones.  A
        backward or inference graph's kernel (Inductor's optimize_mem)
        copies to the host instead each buffer that would take the GPU
        past its peak so far (copy_args_to_cpu_if_needed's budget,
        max_memory_allocated() - memory_allocated()), which each
        configuration the autotuner times takes anew."""
        if kernel in self.tuned:
            return
        self.tuned.add(kernel)
        rec = self.rec
        nb = L2_BYTES.get(getattr(rec.opt, "device", "h200"))
        if not nb:
            return
        # CachingAutotuner.bench for each configuration, the budget
        # taken anew each time: a copy the first one sends to the host
        # may fit beside the second's once the first's flush buffer has
        # raised the peak.  One stands for them all when it sent none
        # there (the next ones make the same blocks), two otherwise
        # (from the second on the budget is the same).
        def run(gpu):
            keys = [object() for _ in gpu]
            for c, k in zip(gpu, keys):
                rec.alloc(c, "temporary", "triton autotune clone", k)
            for k in keys:
                rec.free(k)
        for config in range(2):
            budget = rec.peak - rec.allocated
            gpu = []
            for c in clones:
                if kind == "forward" or c <= budget:
                    gpu.append(c)
                    budget -= c
            run(gpu)
            key = object()
            rec.alloc(nb, "temporary", "triton autotune L2 flush", key)
            run(gpu)
            rec.free(key)
            if len(gpu) == len(clones):
                break

    def _death(self, key):
        def cb(_ref):
            self.refs.pop(key, None)
            self.rec.retired.discard(key)
            self.rec.free(key)
        return cb


def _recorders(hook):
    """Whether HOOK (a global module hook) is the recorder's own."""
    return getattr(hook, "__module__", "").startswith(
        __package__ or "memsim_record")


def _guards_as_run(torch):
    """Dynamo builds a compiled frame's guards with the recorder's
    dispatch mode set aside (TorchDispatchMode.ignore_compile_internals),
    and a tensor's guard (GuardBuilder.TENSOR_MATCH) keeps its dispatch
    keys as the thread's local dispatch key set then applies them
    (guards.cpp's LocalState); the compiled frame runs with the mode on
    the stack, whose Python and PythonTLSSnapshot keys are then in that
    set.  A host tensor's guard (a CPU learning rate, a CPU scalar) would
    fail at every call: a recompilation each call ("Unexpected
    recompilation") up to recompile_limit, then the frame runs eagerly.
    The guards are built, and checked once as CheckFunctionManager does,
    under a dispatch mode that only runs each op: the keys as the frame
    will run, and an op a guard evaluates (a host tensor's .item()) has
    a mode to go to."""
    from torch._dynamo.guards import CheckFunctionManager
    from torch.utils._python_dispatch import TorchDispatchMode
    if getattr(CheckFunctionManager, "_memsim", False):
        return
    init = CheckFunctionManager.__init__

    class AsRun(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    @functools.wraps(init)
    def built_as_run(self, *a, **k):
        with AsRun():
            init(self, *a, **k)
    CheckFunctionManager.__init__ = built_as_run
    CheckFunctionManager._memsim = True


# Multiply-adds (M * K * N) from which a half-precision matmul pad_mm
# benchmarks is more likely padded than not on the H200
# (docs/recording-compile.md, "pad_mm on the H200").
PAD_LARGE = 10 ** 10


class PadBench:
    """Inductor's pad_mm pass (torch._inductor.fx_passes.pad_mm) benchmarks
    matmuls on the GPU while it compiles.  The pass is one of the
    joint-graph pattern passes, which run on each training graph before it
    is partitioned (compile_fx.partition_fn) and on each inference graph
    (compile_fx_forward), so at a graph's first call.  For each mm, bmm
    and addmm node the pattern matcher meets (last node first),
    should_pad() asks:

    - can_pad(): config.shape_padding (TORCHINDUCTOR_SHAPE_PADDING, on
      by default), both matrices on the GPU and floating point, one of M,
      K, N not a multiple of the dtype's alignment (8 elements for fp16
      and bf16, 4 for fp32: get_alignment_size; a dimension of 1 is
      left), not config.deterministic, and Triton (which a CUDA build of
      PyTorch has: has_triton() is answered True here);
    - _should_pad(): config.force_shape_pad pads without benchmarking;
      is_mm_compute_bound() is True on every GPU memsim models (its
      datasheet, torch._inductor.analysis.device_info, names none of them
      exactly, and Triton's estimate, from a clock rate in MHz where it
      expects kHz, is three orders of magnitude low: 0.54 TFLOPS bf16
      and 4814 GB/s on the H200, torch 2.11 and Triton 3.6, so any
      shape's arithmetic intensity exceeds the machine balance); a shape
      already decided (should_pad_bench_key(), in-process and in the
      on-disk LocalCache) is not benchmarked again, and the base time of
      the unpadded op (its is_base_time_key) is measured once.

    What a benchmark allocates, in _should_pad's order (the H200
    snapshots of tests/recorder/pad_bench.py and the corpus's
    nanogpt-train-compile, torch 2.11, show each of these requests):
    realize_tensor() makes a random copy of mat1 and mat2 (torch.randn of
    each one's strided extent), and of addmm's input when its base time
    is measured; a matrix whose padding can be planned away
    (should_exclude_padding_time()) is padded once (constant_pad_nd);
    addmm's padded run gets its own input (randn_like).  Then
    benchmarker.benchmark_gpu (InductorBenchmarker) runs each of the
    unpadded op (unless its base time is known) and the padded one
    (pad_mm / pad_bmm / pad_addmm: the matrices not padded beforehand
    padded each call, addmm's input padded with new_zeros and cat,
    the product, the pads freed as the function returns, then the
    product): once to warm up (the first GEMM of the thread makes
    cuBLAS's workspace, an addmm with a 1-D input cuBLASLt's, after its
    output: fake.py's rule), then with the L2-flush buffer of
    get_device_cache_size() (the device's L2, as Triton's autotuner:
    L2_BYTES) allocated around the timed runs, of which one stands for
    all (each frees what it allocates).  The copies are freed when
    _should_pad returns.

    The padded form is taken only if it ran 1.1 times faster
    (is_padded_faster): that is a timing the recorder cannot know, and
    it assumes not (assumption compile:pad_mm, one a benchmarked shape):
    the graph keeps its unpadded op, as the corpus's compiled programs
    do on the H200.  The cache is assumed cold (the first compile of the
    shape on the machine): a second run of a program on a GPU machine
    skips the benchmarks whose results Inductor kept on disk."""

    def __init__(self, torch, rec):
        self.torch = torch
        self.rec = rec
        self.decided = set()   # should_pad_bench_key()s benchmarked
        self.timed = set()     # their base-time keys

    def install(self):
        """pad_mm's should_pad(), which its pattern checks
        (should_pad_mm, should_pad_bmm, should_pad_addmm) call by name,
        becomes this model's."""
        try:
            from torch._inductor.fx_passes import pad_mm
            pad_mm.should_pad, pad_mm.can_pad, pad_mm.has_triton
        except (ImportError, AttributeError):
            return   # a PyTorch without the pass: nothing benchmarked
        if getattr(pad_mm.should_pad, "__self__", None) is not self:
            pad_mm.should_pad = self.should_pad

    def should_pad(self, match, mat1, mat2, op, input=None):
        from torch._inductor.fx_passes import pad_mm as pm
        has_triton = pm.has_triton
        pm.has_triton = lambda: True
        try:
            if not pm.can_pad(mat1, mat2, op, input):
                return False
        finally:
            pm.has_triton = has_triton
        return self.decide(match, mat1, mat2, op, input)

    def decide(self, match, mat1, mat2, op, input):
        """_should_pad(): whether to pad, with the benchmark's requests."""
        torch = self.torch
        from torch._inductor import config
        from torch._inductor.fx_passes import pad_mm as pm
        aten = torch.ops.aten
        bmm = op is aten.bmm
        m, k = (mat1.shape[1], mat1.shape[2]) if bmm else mat1.shape
        n = mat2.shape[-1]
        a1, a2 = pm.get_alignment_size(mat1), pm.get_alignment_size(mat2)
        mp, kp = pm.get_padded_length(m, a1), pm.get_padded_length(k, a1)
        np_ = pm.get_padded_length(n, a2)
        if config.force_shape_pad:
            return True
        if "pad_aten_mm_pass" in config.post_grad_fusion_options:
            mk = [_hint(x) for x in (m, k, n)]
            if pm.should_pad_mm_bf16(mat1.dtype, mk[0], mk[2], mk[1]):
                return True
        key = pm.should_pad_bench_key(match, mat1, mat2, op, input)
        if key in self.decided:
            return False
        self.decided.add(key)
        base = pm.should_pad_bench_key(match, mat1, mat2, op, input,
                                       is_base_time_key=True)
        timed = base in self.timed
        self.timed.add(base)
        self.rec.assume("compile:pad_mm")
        hm, hk, hn = (_hint(x) for x in (m, k, n))
        if mat1.dtype in (torch.float16, torch.bfloat16) and \
                hm * hk * hn >= PAD_LARGE:
            # a half-precision matmul that large was padded on the H200
            # in 8 of 9 shapes of the grid docs/recording-compile.md gives
            # (pad_mm's own benchmark): the assumption is likely wrong here
            values.assume(self.rec, "compile:pad_mm-large",
                          "unpadded %dx%dx%d %s" % (
                              hm, hk, hn, str(mat1.dtype)[6:]))
        self.run(self.events(match, mat1, mat2, op, input, timed,
                             (int(mp), int(kp), int(np_))),
                 [input, mat1, mat2] if input is not None else
                 [mat1, mat2])
        return False

    def events(self, match, mat1, mat2, op, input, timed, pads):
        """The requests of one benchmark: ("alloc", tag, bytes),
        ("free", tag), ("gemm", name) for the workspaces a GEMM's first
        call makes, ("flush", tag) for the L2-flush buffer."""
        from torch._inductor.fx_passes import pad_mm as pm
        aten = self.torch.ops.aten
        mp, kp, np_ = pads
        bmm = op is aten.bmm
        addmm = op is aten.addmm
        name = "bmm" if bmm else ("addmm" if addmm else "mm")
        item = mat1.element_size()
        b = _hint(mat1.shape[0]) if bmm else 1
        m, k = [_hint(x) for x in mat1.shape[-2:]]
        n = _hint(mat2.shape[-1])

        def extent(t):
            """realize_tensor's copy: the strided extent, in bytes"""
            shape = [_hint(d) for d in t.shape]
            if 0 in shape:
                return 0
            return (1 + sum((d - 1) * _hint(s)
                            for d, s in zip(shape, t.stride()))) * \
                t.element_size()
        ev = [("alloc", "mat1", extent(mat1)), ("alloc", "mat2",
                                                extent(mat2))]
        copies = ["mat1", "mat2"]
        real_input = addmm and input is not None and not timed
        if real_input:
            ev.append(("alloc", "input", extent(input)))
            copies.append("input")
        pre1 = pm.should_exclude_padding_time(match, "mat1") and \
            bool(mp or kp)
        pre2 = pm.should_exclude_padding_time(match, "mat2") and \
            bool(kp or np_)
        p1 = b * (m + mp) * (k + kp) * item
        p2 = b * (k + kp) * (n + np_) * item
        if pre1:
            ev.append(("alloc", "mat1_pad", p1))
            copies.append("mat1_pad")
        if pre2:
            ev.append(("alloc", "mat2_pad", p2))
            copies.append("mat2_pad")
        if addmm and input is not None:
            # randn_like of the (realized) input: its size, dense
            ev.append(("alloc", "input_pad", _numel(
                [_hint(x) for x in input.shape]) * input.element_size()))
            copies.append("input_pad")
        orig = [("alloc", "out", b * m * n * item), ("gemm", name),
                ("free", "out")]
        pad = []
        if not pre1 and (mp or kp):
            pad.append(("alloc", "p1", p1))
        if not pre2 and (kp or np_):
            pad.append(("alloc", "p2", p2))
        local = [t for _, t, *_ in pad]
        if addmm and input is not None:
            # pad_dim: new_zeros of the padding, cat, the zeros freed
            shape = [_hint(x) for x in input.shape]
            isz = input.element_size()
            steps = []
            if np_ and shape[-1] != 1:
                steps.append((len(shape) - 1, np_))
            if mp and len(shape) == 2 and shape[0] != 1:
                steps.append((0, mp))
            last = None
            for i, (dim, ln) in enumerate(steps):
                zeros = list(shape)
                zeros[dim] = ln
                shape[dim] += ln
                tag = "in%d" % i
                pad += [("alloc", "zeros", _numel(zeros) * isz),
                        ("alloc", tag, _numel(shape) * isz),
                        ("free", "zeros")]
                if last is not None:
                    pad.append(("free", last))
                last = tag
            if last is not None:
                local.insert(0, last)
        pad.append(("alloc", "res", b * (m + mp) * (n + np_) * item))
        pad.append(("gemm", name))
        pad += [("free", t) for t in local] + [("free", "res")]
        ev += self.bench(orig) if not timed else []
        ev += self.bench(pad)
        return ev + [("free", t) for t in copies]

    @staticmethod
    def bench(fn):
        """benchmark_gpu(fn): a warm-up call, the L2-flush buffer, the
        timed calls (one here), the buffer freed."""
        return fn + [("flush", "l2")] + \
            [e for e in fn if e[0] != "gemm"] + [("free", "l2")]

    def run(self, events, args):
        rec = self.rec
        keys = {}
        site = "inductor pad_mm benchmark"
        l2 = L2_BYTES.get(getattr(rec.opt, "device", "h200"))
        for e in events:
            if e[0] == "alloc":
                keys[e[1]] = object()
                if e[2] > 0:
                    rec.alloc(e[2], "temporary", site, keys[e[1]])
            elif e[0] == "free":
                rec.free(keys.pop(e[1], None))
            elif e[0] == "gemm":
                ws = getattr(rec, "blas_workspaces", None)
                if ws is not None:
                    ws(e[1], args)
            elif e[0] == "flush" and l2:
                keys[e[1]] = object()
                rec.alloc(l2, "temporary", site + " L2 flush", keys[e[1]])


# PyTorch's backends that run AOTAutograd's graphs op by op
# (torch._dynamo.backends.debugging)
AOT_EAGER = ("aot_eager", "aot_eager_default_partitioner")


def _numel(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


def skip_own_frames(torch):
    """skip_code on every function of the recorder (its modules',
    their classes' and the closures made in them, its replacements of
    PyTorch's functions and methods among them).  PyTorch has
    those in C++, or in its own files, which Dynamo's frame hook never
    compiles as frames of their own (trace_rules' SKIP_DIRS); after a
    graph break the frame runs eagerly, and the frames it calls are
    hooked each in turn, so a replacement called there was compiled
    instead: the recorder's F.linear, its op a graph of its own
    (install's docstring), or the host side's FakeTensor.tolist, whose
    dictionaries of storages traced into graphs made the process abort
    (a python_error thrown through Dynamo's C++ frame evaluation,
    "terminate called", signal 6: RWKV-8's ROSA trainer calls
    x.cpu().tolist() in a compiled model's forward).  Where a compiled
    frame calls them they are traced as before: skip_code concerns a
    frame of its own alone.  Each call walks them anew (modules the
    recorder imports late), the code objects skipped already passed
    over."""
    import os
    import sys
    import types
    from torch._dynamo.eval_frame import skip_code
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    pkg = __name__.rpartition(".")[0]
    seen = _own_skipped

    def walk(code):
        if id(code) in seen or \
                not os.path.abspath(code.co_filename).startswith(here):
            return
        seen.add(id(code))
        skip_code(code)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                walk(c)

    def members(ns, depth=0):
        for v in list(ns.values()):
            if isinstance(v, (staticmethod, classmethod)):
                v = v.__func__
            fs = (v.fget, v.fset, v.fdel) if isinstance(v, property) \
                else (v,)
            for f in fs:
                code = getattr(f, "__code__", None)
                if isinstance(code, types.CodeType):
                    walk(code)
            if isinstance(v, type) and depth < 2:
                members(vars(v), depth + 1)

    for name, mod in list(sys.modules.items()):
        if mod is not None and (name == pkg or name.startswith(pkg + ".")):
            members(vars(mod))


# the ids of the code objects skip_own_frames() skipped
_own_skipped = set()


def install(torch, rec):
    """torch.compile (and Module.compile, which calls it) with the
    predicted programs; compile(disable=True) returns its argument.
    The recorder's Python replacements of PyTorch's functions
    (fake.py's F.linear, F.scaled_dot_product_attention, F.rms_norm,
    torch.ctc_loss), which PyTorch has in C++: once a program compiles,
    Dynamo's frame hook sees every frame its compiled functions call,
    and a frame it cannot trace runs
    eagerly with the frames it calls hooked each in turn (a graph break
    in a loop: the loop's calls of nn.Linear run as frames of their
    own).  torch.nn's files are not compiled as frames of their own
    (trace_rules), and PyTorch's C++ functions have no frame, so such a
    call runs eagerly on the GPU; the recorder's replacements would be
    compiled instead, their op a graph of its own (sparse-moe-pytorch's
    language model head after a graph break in its blocks' loop: a
    compiled 50257-wide matmul and pad_mm's 411 MB benchmark, where the
    H100 ran the head eagerly).  Their code is skipped as a frame
    (skip_code: traced where a compiled frame calls them, as Dynamo
    traces PyTorch's own)."""
    real = torch.compile
    rt = Runtime(torch, rec)
    pad = PadBench(torch, rec)

    def inductor(site, cudagraphs, options=None, tune_all=False):
        """The backend: Inductor's decompositions, its joint-graph passes
        and partitioner (compile_fx.partition_fn: remove_noop_ops, the
        pattern passes, min_cut_rematerialization_partition), its
        post-grad passes on each graph; then Program in place of
        Inductor's lowering and code generation."""
        from torch._dynamo.backends.common import aot_autograd
        from torch._guards import detect_fake_mode
        from torch._inductor.decomposition import select_decomp_table

        def partition(gm, joint_inputs, **kw):
            from torch._inductor import compile_fx, config
            # constant_fold_uniform_value computes constants for real, on
            # the GPU: left out (it folds full() tensors, which are
            # fused anyway).
            from torch._inductor.virtualized import V
            with config.patch(joint_graph_constant_folding=False), \
                    V.set_fake_mode(detect_fake_mode(joint_inputs)):
                return compile_fx.partition_fn(gm, joint_inputs, **kw)

        def joint_passes(gm, example_inputs):
            import inspect
            from torch._inductor import compile_fx
            f = compile_fx._recursive_joint_graph_passes
            dev = [a.device for a in example_inputs
                   if isinstance(a, torch.Tensor)]
            if dev and "input_device" in inspect.signature(f).parameters:
                return f(gm, input_device=dev[0])
            return f(gm)

        def compiler(kind):
            def c(gm, example_inputs):
                from torch._inductor import config
                from torch._inductor.fx_passes.post_grad import \
                    post_grad_passes
                from torch._inductor.virtualized import V
                # (a backward graph is compiled at the first backward,
                # under the recorder: nothing of it is recorded)
                with rt.quiet(), V.set_fake_mode(
                        detect_fake_mode(example_inputs)):
                    if kind == "inference":
                        # an inference graph is never partitioned: its
                        # joint-graph passes run here, on its inputs'
                        # device (compile_fx_forward)
                        with config.patch(
                                joint_graph_constant_folding=False):
                            gm = joint_passes(gm, example_inputs)
                    post_grad_passes(gm, kind == "inference")
                donated = ()
                if kind == "backward":
                    # the saved activations AOTAutograd donates to the
                    # backward, which Inductor's kernels may write over
                    # (GraphLowering's bw_donated_idxs)
                    from torch._inductor import utils as iu
                    get = getattr(iu, "get_donated_idxs", None)
                    donated = (get() if get is not None else None) or ()
                p = Program(torch, rec, gm, kind, rt, site, cudagraphs,
                            tune_all, donated)

                def run(args):
                    return p(args)
                run._boxed_call = True
                return run
            return c

        aot = aot_autograd(
            fw_compiler=compiler("forward"),
            bw_compiler=compiler("backward"),
            inference_compiler=compiler("inference"),
            partition_fn=partition,
            decompositions=select_decomp_table(),
            # as compile_fx gives it to aot_autograd: an input mutated by
            # an inference graph (a compiled optimizer step's parameters
            # and state, a KV cache written under no_grad) is written in
            # place by a copy_ at the graph's end, which Inductor's kernels
            # do where they compute the value (no buffer, not an output
            # copied back by the runtime wrapper)
            keep_inference_input_mutations=True)

        def backend(gm, example_inputs):
            # make_fx propagates small constants (numel <= 1: a
            # torch.tensor([]) in the compiled code, transformers'
            # DynamicCache) by computing them for real, on the GPU when
            # moved there: they are traced as any tensor here.
            import torch.fx.experimental.proxy_tensor as pt
            limit = pt.CONSTANT_NUMEL_LIMIT
            pt.CONSTANT_NUMEL_LIMIT = -1
            from torch._inductor import config
            try:
                # torch.compile's options are Inductor config patches
                # while it compiles (shape_padding, force_shape_pad, ...)
                with config.patch(options or {}):
                    return aot(gm, example_inputs)
            except Exception as e:
                from torch._dynamo.exc import (
                    RestartAnalysis, exceptions_allowed_to_be_fallback)
                if isinstance(e, RestartAnalysis):
                    # Dynamo's own signal (TensorifyScalarRestartAnalysis:
                    # a float specialized, a scheduler's lr): it traces
                    # the frame again, as with Inductor
                    raise
                if isinstance(e, exceptions_allowed_to_be_fallback):
                    # what the fake tensors of any backend raise (a
                    # .tolist() in a custom operator's backward: a data-
                    # dependent value): OutputGraph.call_user_compiler
                    # turns it into a graph break, the frame runs eagerly
                    # and Dynamo compiles the frames it calls, one by
                    # one, as with Inductor on the GPU
                    raise
                # A graph AOTAutograd or Inductor's passes cannot take
                # without a GPU (a CPU constant moved to the device while
                # tracing, prims.device_put): Dynamo's graph runs as it
                # is, eagerly, under the recorder; an assumption names
                # the error.
                import sys
                msg = str(e).strip().splitlines()
                print("memsim record: a graph of %s runs eagerly: %s: %s" % (
                    site, type(e).__name__, msg[0][:200] if msg else ""),
                    file=sys.stderr)
                rec.assume("compile:eager-graph")
                return gm.forward
            finally:
                pt.CONSTANT_NUMEL_LIMIT = limit
        return backend

    def optimizer_init():
        """A compiled optimizer step: Dynamo does not trace the
        optimizer's _init_group but runs it, for real, while it traces
        (OptimizerVariable.call_method; move_step_if_cpu first moves CPU
        step counts to the parameters' device), with the recorder's modes
        set aside as for every compile internal: the optimizer's state
        (exp_avg, torch.zeros((), device=p.device) step counts, capturable
        as Dynamo makes the step) would be made on the real GPU.  Both
        run under the recorder's modes again (fake.py's
        rec.script_modes), the state recorded as an eager first step
        makes it."""
        from torch._dynamo.variables import optimizer as dov
        ov = dov.OptimizerVariable
        if getattr(ov, "_memsim_init", False):
            return
        modes = getattr(rec, "script_modes", None)
        if modes is None:
            return

        def under_recorder(f):
            @functools.wraps(f)
            def w(*a, **k):
                ms = modes()
                for m in ms:
                    m.__enter__()
                try:
                    return f(*a, **k)
                finally:
                    for m in reversed(ms):
                        m.__exit__(None, None, None)
            return w

        orig_call = ov.call_method

        def call_method(self, tx, name, args, kwargs):
            if name != "_init_group":
                return orig_call(self, tx, name, args, kwargs)
            opt = self.value
            init = opt.__dict__.get("_init_group")
            opt._init_group = under_recorder(type(opt)._init_group.__get__(
                opt))
            try:
                return orig_call(self, tx, name, args, kwargs)
            finally:
                if init is None:
                    opt.__dict__.pop("_init_group", None)
                else:
                    opt._init_group = init

        ov.call_method = call_method
        ov.move_step_if_cpu = under_recorder(ov.move_step_if_cpu)
        ov._memsim_init = True
        # Its guards then ask whether each gradient has a static address
        # for CUDA graphs (only for a performance hint in the log), through
        # cudagraph_trees, which a PyTorch without CUDA cannot import: the
        # answer where no cudagraph tree manager exists (get_manager gives
        # None), the tensor's static address type.
        from torch._dynamo.utils import get_static_address_type
        dov._is_static_for_cudagraphs = lambda x: \
            not x.is_cuda or get_static_address_type(x) is not None

    def hooks_aside(f):
        """Run F with the recorder's module hooks set aside: Dynamo would
        trace them into the graph.  The compiled module stays the site."""
        import torch.nn.modules.module as nnm

        @functools.wraps(f)
        def w(*a, **k):
            saved = []
            for d in (nnm._global_forward_pre_hooks,
                      nnm._global_forward_hooks):
                for key, h in list(d.items()):
                    if _recorders(h):
                        saved.append((d, key, h))
                        del d[key]
            try:
                return f(*a, **k)
            finally:
                for d, key, h in saved:
                    d[key] = h
        return w

    backends = {}

    def set_modes_aside():
        """Dynamo compiles with the recorder's modes set aside and puts
        them back for the compiled code
        (TorchDispatchMode.ignore_compile_internals)."""
        from torch.utils._python_dispatch import \
            _get_current_dispatch_mode_stack
        for m in _get_current_dispatch_mode_stack():
            if not m.is_infra_mode():
                type(m).ignore_compile_internals = classmethod(
                    lambda cls: True)

    def aot_eager(model, backend, fullgraph, dynamic, kwargs):
        """torch.compile(backend="aot_eager") and its default-partitioner
        twin: PyTorch's own backend (debugging.aot_eager: aot_autograd
        with min_cut_rematerialization_partition, or the default
        partitioner, and boxed_nop compilers, no decompositions), whose
        graphs' aten ops run under the recorder as any op does."""
        skip_own_frames(torch)
        optimizer_init()
        set_modes_aside()
        return real_compile(model, backend, fullgraph, dynamic, kwargs)

    def real_compile(model, backend, fullgraph, dynamic, kwargs):
        """PyTorch's torch.compile of MODEL with BACKEND, the recorder's
        module hooks set aside where it runs (hooks_aside)."""
        cm = real(model, fullgraph=fullgraph, dynamic=dynamic,
                  backend=backend, **kwargs)
        if isinstance(cm, torch.nn.Module):
            cm.forward = hooks_aside(cm.forward)
            return cm
        return hooks_aside(cm)

    def compile(model=None, *, fullgraph=False, dynamic=None,
                backend="inductor", mode=None, options=None,
                disable=False, **kwargs):
        if model is None:  # @torch.compile(mode=...)
            return lambda m: compile(
                m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                mode=mode, options=options, disable=disable, **kwargs)
        if disable:
            return model
        if backend in AOT_EAGER:
            # Dynamo's graph through AOTAutograd (its partitioner picks
            # what the forward saves), each graph then run op by op
            # (boxed_nop): recorded as those ops run, outside Inductor
            rec.assume("compile:aot_eager")
            return aot_eager(model, backend, fullgraph, dynamic, kwargs)
        if backend != "inductor":
            # another backend (eager, a user's): recorded as the program
            # runs eagerly
            rec.assume("compile:eager")
            return model
        rec.assume("compile:inductor")
        pad.install()
        skip_own_frames(torch)
        optimizer_init()
        # What Inductor's passes ask of a GPU: its partitioner enters a
        # device guard (torch.cuda.device: _exchange_device), the pattern
        # passes make CUDA tensors in fake modes of their own, which would
        # propagate constants on the device unless avoid_device_init.
        torch.cuda._exchange_device = lambda d: 0
        torch.cuda._maybe_exchange_device = lambda d: 0
        from torch._subclasses.fake_tensor import FakeTensorMode
        FakeTensorMode.avoid_device_init = property(lambda self: True)
        # CUDA graphs: mode reduce-overhead or max-autotune, or the
        # option triton.cudagraphs (torch._inductor.config)
        graphs = mode in ("reduce-overhead", "max-autotune") or \
            bool((options or {}).get("triton.cudagraphs"))
        if graphs:
            rec.assume("compile:cudagraphs")
        owner = getattr(model, "__self__", None)   # Module.compile()
        if isinstance(model, torch.nn.Module):
            name = type(model).__name__
        elif isinstance(owner, torch.nn.Module):
            name = type(owner).__name__
        else:
            name = getattr(model, "__name__", type(model).__name__)
        set_modes_aside()
        # max-autotune benchmarks every kernel's configurations, foreach
        # and small pointwise kernels included (Program._configs)
        from torch._inductor import config as inductor_config
        tune_all = mode in ("max-autotune", "max-autotune-no-cudagraphs") \
            or any((options or {}).get(k) or getattr(inductor_config, k)
                   for k in ("max_autotune", "max_autotune_pointwise"))
        # One backend for one setting, as torch.compile's "inductor" is
        # one callable: Dynamo's cache entries name the backend they were
        # compiled for (BACKEND_MATCH), and a program that compiles the
        # same function at each call (create_block_mask(_compile=True)
        # calls torch.compile(create_block_mask) each time) would
        # otherwise compile it anew until recompile_limit, then run it
        # eagerly.
        key = (name, graphs, repr(sorted((options or {}).items())),
               tune_all)
        be = backends.get(key)
        if be is None:
            be = backends[key] = inductor("compiled " + name, graphs,
                                          options, tune_all)
        return real_compile(model, be, fullgraph, dynamic, kwargs)

    torch.compile = compile
    _guards_as_run(torch)
    # OptimizedModule.__call__ warns at each call site when a global
    # module hook is registered (_has_any_global_hook): the program's
    # own, not the recorder's, which the compiled code never sees
    # (hooks_aside)
    import torch.nn.modules.module as nnm

    def _has_any_global_hook():
        hooks = (nnm._global_backward_pre_hooks, nnm._global_backward_hooks,
                 nnm._global_forward_pre_hooks, nnm._global_forward_hooks)
        mine = {k for d in hooks for k, h in d.items() if _recorders(h)}
        return any(k not in mine for d in hooks + (
            nnm._global_forward_hooks_always_called,
            nnm._global_forward_hooks_with_kwargs) for k in d)
    nnm._has_any_global_hook = _has_any_global_hook
    # Called each step with reduce-overhead; the real one imports
    # cudagraph_trees, which a PyTorch without CUDA cannot.  A new step
    # starts a new generation at the next graphed call (Runtime.tree_call),
    # even with a backward pending.
    def mark_step_begin():
        rt.marks -= 1       # MarkStepBox.mark_step_counter
    torch.compiler.cudagraph_mark_step_begin = mark_step_begin
    # torch._inductor.cudagraph_mark_step_begin is the same call by its
    # other public name (LightGlue's compile() calls it), which imports
    # cudagraph_trees as well: the same count, once Inductor's package
    # is imported (the access torch._inductor imports it).
    def inductor_mark(mod):
        was = mod.__dict__.get("cudagraph_mark_step_begin")
        mod.cudagraph_mark_step_begin = mark_step_begin

        def undo():
            mod.cudagraph_mark_step_begin = was
        return undo
    host.on_import("torch._inductor", inductor_mark)

    # torch._dynamo.reset (torch.compiler.reset: OLMo's trainer calls it
    # after each evaluation of a compiled model) ends with
    # reset_cudagraph_trees where CUDA is available, importing
    # cudagraph_trees, which a PyTorch without CUDA cannot.  The trees
    # are the recorder's (Runtime): Dynamo's reset runs without that
    # import, and the recorder's trees are reset as reset_cudagraph_trees
    # resets the real ones (Runtime.reset_trees: container_dict cleared
    # after each manager's shutdown, a new tree with a pool of its own
    # at the next graphed call).  Not modelled:
    # the old tree's pool handing its segments back (its graphs die with
    # the manager); nothing where no tree was made (every mode but
    # reduce-overhead), as on the GPU.
    import torch._dynamo as dyn
    orig_reset = dyn.reset

    @functools.wraps(orig_reset)
    def reset():
        avail = torch.cuda.is_available
        torch.cuda.is_available = lambda: False
        try:
            orig_reset()
        finally:
            torch.cuda.is_available = avail
        rt.reset_trees()
    dyn.reset = reset

    # Dynamo compiles a frame with the dispatch modes set aside
    # (CatchErrorsWrapper.__call__: `with compile_lock,
    # _disable_current_modes()`), but not on its DDP path: a frame run
    # under DistributedDataParallel with optimize_ddp "ddp_optimizer" is
    # traced by a clone of the callback whose backend is
    # DDPOptimizer.compile_fn (`_clone_with_backend`), under compile_lock
    # alone.  There the recorder's modes saw every fake value Dynamo's
    # tracing computes (get_fake_value) and DDPOptimizer's propagation
    # through its split submodules (deepcopy_to_fake_tensor), and recorded
    # them as allocations, live while the graph's metadata held them
    # (modded-nanogpt's DDP(torch.compile(model))).  The clone is called
    # with the modes set aside, as the other path calls the callback; its
    # compiled code runs under them as any compiled frame does.
    import torch._dynamo.convert_frame as cf
    from torch.utils._python_dispatch import _disable_current_modes

    def modes_aside(prop):
        def get(self):
            clone = prop.fget(self)

            def with_backend(backend):
                callback = clone(backend)

                def call(*a, **k):
                    with _disable_current_modes():
                        return callback(*a, **k)
                return call
            return with_backend
        get._memsim = True
        return property(get)
    for name in ("ConvertFrame", "ConvertFrameAssert"):
        cls = getattr(cf, name, None)
        prop = cls.__dict__.get("_clone_with_backend") \
            if cls is not None else None
        if isinstance(prop, property) and \
                not getattr(prop.fget, "_memsim", False):
            cls._clone_with_backend = modes_aside(prop)
