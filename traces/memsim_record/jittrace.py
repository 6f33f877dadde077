"""torch.jit.trace under memsim record --fake.

torch.jit.trace (tensorboard's SummaryWriter.add_graph, TorchScript and
ONNX exports) runs the model once under the tracer, whose thread-local
state (torch._C._get_tracing_state) is set.  The Tracer dispatch key sits
above Autograd and the recording mode: each op's TraceType kernel adds
its node (the inputs' values: addInputs, constants and ListConstructs
inserted before it), clears the state (setTracingState(nullptr)),
redispatches, then puts the state back and ties each output to the node
(tracer::addOutput: the value's type inferred from the tensor,
setValueTrace).  An op so traced reaches the mode with the state clear.

Where the recorder replaces a PyTorch function by its own Python (the
cuDNN RNNs of rnn.py, F.scaled_dot_product_attention's backend choice,
the fused rms_norm), a CUDA run's graph has the one op that function
dispatches; call() adds that op's node as TraceType would and runs the
replacement untraced, so that its ops (and its sizes, read as traced
0-dim tensors under tracing: THPSize) stay out of the graph.
"""
import os


def state(torch):
    """The tracer's state of this thread, or None."""
    get = getattr(torch._C, "_get_tracing_state", None)
    return get() if get is not None else None


def _key(torch):
    return torch._C._parse_dispatch_key("Tracer")


def dispatch(torch, enabled):
    """Lift (ENABLED) or put back this thread's exclusion of the Tracer
    key; returns the old setting.  The Python key's handler runs with it
    excluded (with the keys below autograd), and setTracingState asserts
    it is not (tracer::impl::set_dispatch_enabled)."""
    key = _key(torch)
    was = torch._C._dispatch_tls_is_dispatch_key_excluded(key)
    torch._C._dispatch_tls_set_dispatch_key_excluded(key, not enabled)
    return not was


def set_state(torch, st):
    was = dispatch(torch, True)
    try:
        torch._C._set_tracing_state(st)
    finally:
        dispatch(torch, was)


class paused:
    """The tracer's state cleared for a block (as TraceType's kernel
    clears it around its redispatch), put back after."""

    def __init__(self, torch):
        self.torch = torch
        self.state = state(torch)

    def __enter__(self):
        if self.state is not None:
            set_state(self.torch, None)
        return self

    def __exit__(self, *exc):
        if self.state is not None:
            set_state(self.torch, self.state)
        return False


def _input(torch, g, ty, v):
    """The graph value of the argument V of schema type TY, as TraceType's
    addInputs makes it: a tensor's traced value (a constant where the
    tracer has none), a list of tensors or numbers a ListConstruct, a
    number or None a constant."""
    C = torch._C
    if isinstance(v, torch.Tensor):
        return C._get_value_trace(v)
    if isinstance(v, (list, tuple)):
        el = ty.getElementType() if isinstance(ty, C.ListType) else None
        if el is None and isinstance(ty, C.OptionalType):
            inner = ty.getElementType()
            el = inner.getElementType() \
                if isinstance(inner, C.ListType) else None
        if el is not None and isinstance(el, (C.TensorType, C.OptionalType)):
            vals = [C._get_value_trace(t) for t in v]
            lt = C.ListType.ofTensors()
        else:
            vals = [g.insertConstant(x) for x in v]
            lt = C.ListType(el if el is not None else C.IntType.get())
        n = g.create("prim::ListConstruct", vals, 1)
        n.output().setType(lt)
        g.insertNode(n)
        return n.output()
    return g.insertConstant(v)


def arguments(op, args, kwargs):
    """ARGS and KWARGS of OP (an OpOverload) in its schema's order, the
    defaults filled in."""
    out = []
    for i, a in enumerate(op._schema.arguments):
        if i < len(args) and not a.kwarg_only:
            out.append(args[i])
        elif a.name in kwargs:
            out.append(kwargs[a.name])
        elif a.has_default_value():
            out.append(a.default_value)
        else:
            raise TypeError("%s: no argument %s" % (op, a.name))
    return out


def call(torch, op, args, kwargs, fn):
    """FN() (the recorder's own code for OP(*ARGS, **KWARGS)); under the
    tracer, OP's node added first and FN run untraced, its outputs then
    the node's."""
    st = state(torch)
    if st is None:
        return fn()
    g = st.graph()
    vals = [_input(torch, g, a.type, v) for a, v in
            zip(op._schema.arguments, arguments(op, args, kwargs or {}))]
    node = g.create(op._schema.name, vals, len(op._schema.returns))
    g.insertNode(node)
    with paused(torch):
        out = fn()
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for i, t in enumerate(outs):
        if isinstance(t, torch.Tensor):
            v = node.outputsAt(i)
            v.inferTypeFrom(t)
            torch._C._set_value_trace(t, v)
    return out


_HERE = None
_PLUMBING = tuple(os.path.join("torch", *p.split("/")) for p in (
    "_dynamo/eval_frame.py", "_compile.py", "_ops.py",
    "utils/_python_dispatch.py"))


def install(torch):
    """The tracer names a traced value after the program's variable that
    holds the tensor (TracingState's lookup_var_name_fn: torch.jit's
    _create_interpreter_name_lookup_fn, which reads the locals of the
    Python frame that called the op).  Where that frame is the
    recorder's (its F.linear, its scaled_dot_product_attention), the
    program's frame above is the one read, as on a GPU, where those are
    PyTorch's C++: the names are the program's, and reading a frame's
    locals (frame.f_locals, a snapshot kept on the frame until read
    again) holds the tensors it names from the same frame as on a GPU
    (a tensor rebound in the program's frame freed where a GPU run
    frees it, not at a later op's lookup).  Returns the undo."""
    global _HERE
    import inspect
    _HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
    try:
        from torch.jit import _trace
    except ImportError:
        return lambda: None
    orig = getattr(_trace, "_create_interpreter_name_lookup_fn", None)
    if orig is None:
        return lambda: None

    def lookup_fn(frames_up=1):
        def name_for(var):
            frame = inspect.currentframe()
            # the caller's frame FRAMES_UP above PyTorch's function
            for _ in range(frames_up + 1):
                frame = frame.f_back if frame is not None else None
            # past the recorder's frames (and the dispatch plumbing of
            # PyTorch's between them: a mode's __torch_dispatch__ under
            # Dynamo's disable wrapper, an OpOverload's __call__)
            f, ours = frame, False
            while f is not None and (f.f_code.co_filename.startswith(_HERE)
                                     or f.f_code.co_filename.endswith(
                                         _PLUMBING)):
                ours = ours or f.f_code.co_filename.startswith(_HERE)
                f = f.f_back
            if ours:
                frame = f
            if frame is None:
                return ""
            for k, v in frame.f_locals.items():
                if v is var and isinstance(v, torch.Tensor):
                    return "" if k == "self" else k
            return ""
        return name_for

    _trace._create_interpreter_name_lookup_fn = lookup_fn

    def undo():
        _trace._create_interpreter_name_lookup_fn = orig
    return undo
