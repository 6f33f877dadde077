"""cuDNN RNNs (nn.LSTM, nn.GRU, nn.RNN) under memsim record --fake.

A CUDA build runs torch._VF.lstm/gru/rnn_tanh/rnn_relu as one cuDNN call
(at::native::_cudnn_impl -> _cudnn_rnn), where a build without cuDNN, or the
fake mode without a GPU, decomposes it into per-time-step cells (or fails:
_thnn_fused_gru_cell has no meta kernel).  Here the cuDNN path's tensors are
made instead, in the order RNN.cpp makes them (H200 snapshots' C++ frames,
torch 2.11, cuDNN 9.19; validate/device/rnn_probe.py):

- flatten_parameters() (RNNBase, at every .to()/_apply): when the weights
  are acceptable to cuDNN (torch.backends.cudnn.is_acceptable: fp16, fp32,
  fp64, not bf16), _cudnn_rnn_flatten_weight zero-fills one buffer of all
  the weights and makes each weight a view of it; the old storages go.
- forward, _cudnn_impl: get_dropout_state() (train with dropout: an 8-byte
  temporary, then once per process the cuDNN dropout states,
  cudnnDropoutGetStatesSize: 48 KiB per SM, 6488064 bytes on the H200);
  under autocast, _cudnn_rnn_cast_reflatten copies fp32 weights into a new
  zero-filled fp16 flat buffer (copy_weights_to_flat_buf_views) and casts
  cx, hx and the input (right to left); then _cudnn_rnn: the input made
  contiguous in (T, B, I) order (batch_first: a copy), a weight buffer when
  the weights are not one flat buffer (bf16), output, hy, cy, the workspace
  and, in training, the reserve space (kept for backward); the workspace
  is freed on return, once the reserve was made.
- backward, _cudnn_rnn_backward: zeros for the unused grad_hy/grad_cy,
  _cudnn_rnn_backward_input (input and grad_output contiguous, dx, dhx,
  dcx, workspace) and _cudnn_rnn_backward_weight (input contiguous again,
  dw zero-filled, workspace); the weights' gradients are views of dw.
- packed input (pack_padded_sequence; the overloads lstm.data ...): the
  same calls, the descriptor of seq_length = len(batch_sizes) steps of
  mini_batch = batch_sizes[0] rows (TensorDescriptorListParams) with each
  sequence's own length; the data, output, dx and grad_output are the
  packed N = sum(batch_sizes) rows, and so are the reserve (the padded
  rule's T*B replaced by N, exact for all 300 probes of
  validate/device/rnn_packed_probe.py) and the workspace of another
  algorithm than padded input's (PACKED below).

Reserve space (cudnnGetRNNTempSpaceSizes, training), exact for all 1,824
probes of the grids here and below (316 of tests/data/record/rnn_ws.tsv,
800 bidirectional, 108 of few steps, 600 packed): T*B*D*H*s*(c*L - 1),
rounded up to a multiple of 32 (two packed probes at H 300 show it),
+ 256 bytes, c = 6 LSTM, 7 GRU, 2 RNN (the
gates and states each layer keeps; the last layer's output is the
output), plus with dropout one bit per element of the L-1 dropped layer
outputs.  The workspace, which only cuDNN's algorithm choice knows:
L*D*8 MiB + W + a sequence term, W the weight space's bytes (the flat
buffer: weights and biases, g*H*(I + H + 2)*s for the first layer of each
direction, I = D*H for the others, g gates; the probes with T*B <= 8,
where the sequence term is small, are within 2% of L*D*8 MiB + W).  The
sequence term: for fp16/fp32 and H under 256 (RNN: up to 256), where
cuDNN takes another algorithm, B*d*s*(T*(A*H + B*max(I - H, 0)) + C*H)
whatever L (SMALL_H below, fitted on 708 unidirectional probes: 600 of
validate/device/rnn_small_probe.py, B up to 64, and 108 of
validate/device/rnn_step_probe.py, 1 to 8 steps of 256 to 4096 rows, where
the fit on the first 600 alone was 1.51% off in the median), else the
same form with LARGE_H's constants (5*T*B*d*H*s for bf16), where d is 1
for one
direction and, for two, 1.5 (small H) or 2.8 (large H): a bidirectional
layer's sequence term over the one direction's (BIDIR below; 400 shapes
measured both ways, validate/device/rnn_bidir_probe.py).  With dropout,
one layer output T*B*D*H*s more (what the LSTM probes show; the GRU and
RNN ones at small H showed none, but the fit is closer with it).  The
figures over the four grids are tests/recorder_rnn.sh's (docs/recording.md
quotes them; the rule before the weight space and the small-H term,
1.7*g*H*H*s*L*D in place of W and 5*T*B*D*H*s throughout: 10.6% median
error over the 316 probes, 153 within 10%).  The same size forward,
backward-data and backward-weight, as the H200 ran (rnn_step_probe.py: the
backward's largest freed block equals the forward's workspace in 84 of
its 108 calls; the other 24, LSTM and GRU at I = 128, H = 192, free at
most 34% to 89% of it, not modelled).
"""
import weakref

from . import jittrace

MODES = {"lstm": ("LSTM", 4, 6), "gru": ("GRU", 3, 7),
         "rnn_tanh": ("RNN", 1, 2), "rnn_relu": ("RNN", 1, 2)}


def reserve_bytes(mode, T, B, H, L, D, s, dropout):
    c = MODES[mode][2]
    n = -(-T * B * D * H * s * (c * L - 1) // 32) * 32 + 256
    if dropout:
        n += (T * B * D * H * (L - 1) + 7) // 8
    return n


def weight_space_bytes(mode, I, H, L, D, s):
    """The flat weight buffer of an RNN with biases: per layer and
    direction g*H x (input + H) weights and two g*H biases."""
    g = MODES[mode][1]
    return sum(D * g * H * ((I if layer == 0 else D * H) + H + 2) * s
               for layer in range(L))


# Small hidden sizes, fp16 and fp32 (the H200's 600 probes at H <= 256,
# tests/data/record/rnn_ws_small.tsv, and 108 at 1 to 8 steps): the algorithm cuDNN picks there
# takes, beyond L*D*8 MiB and the weight space, A bytes per hidden unit and
# B per input feature beyond H for each time step, batch row and byte of
# element, and C bytes per hidden unit for each batch row and byte of
# element whatever the number of steps (one more step's worth, which a
# single-step sequence shows: the GRU probes at T = 1 take 24 to 27 bytes
# per hidden unit, those at T >= 20 about 19.5; at 256 to 4096 rows,
# tests/data/record/rnn_step.tsv, each row costs exactly the same bytes
# in all 18 single-step series, about 25*H*s at one step and 19*H*s more
# per step for the GRU at H 128; an H100 gave the same 108 rows to the
# byte),
# whatever the number of layers (least squares of the relative error over
# the probes of rnn_ws_small.tsv and rnn_step.tsv together; LSTM, GRU below
# H = 256, RNN up to 256, where the probes change regime).
SMALL_H = {"lstm": (21.51, 2.02, 8.24, 256), "gru": (19.35, 3.32, 6.02, 256),
           "rnn_tanh": (14.09, 3.32, 6.36, 257),
           "rnn_relu": (14.09, 3.32, 6.36, 257)}


# Bidirectional layers (D = 2): the sequence term is the one direction's
# times 1.5 at small H and 2.8 at large H, not 2 (the H200's 400 paired
# shapes of tests/data/record/rnn_ws_bidir.tsv, each unidirectional and
# bidirectional; the two-direction term over the one-direction one:
# median 1.5 at small H, 2.8 at large; yunjey-birnn's LSTM 1.43).
BIDIR = (1.5, 2.8)


# Packed input (the H100's 300 probes of validate/device/rnn_packed_probe.py,
# LSTM, GRU and RNN, fp16 and fp32, H 64 to 1024, B up to 64, T up to 256,
# four spreads of lengths, each also run padded): cuDNN's workspace is
# another algorithm's than for padded input, smaller even when every
# sequence is full (an RNN of 64 x 64 steps, H 64: 13.7 MB packed, 33.7
# MB padded).  Beyond L*D*8 MiB and the weight space it takes, per
# direction count D, bytes per packed row (N = sum(batch_sizes)) and
# hidden unit (near the gates' count for one direction: 4 LSTM, 3 GRU;
# fitted, not derived), per packed row and input feature beyond H, and
# per batch row (batch_sizes[0]) and hidden unit, each times the
# element's bytes (least squares of the relative error over
# tests/data/record/rnn_ws_packed.tsv; median 0.16%, 10 of the 300 over
# 2%, at most 4.0%).  The same size for the backward's two calls, as the
# probes freed it.
PACKED = {("lstm", 1): (3.98, 0.67, 8.6), ("lstm", 2): (11.97, 3.1, 18.5),
          ("gru", 1): (2.98, 0.62, 4.74), ("gru", 2): (10.03, 1.99, 9.62),
          ("rnn_tanh", 1): (1.88, 1.03, 2.42),
          ("rnn_tanh", 2): (6.56, 4.14, 5.66)}
# The same in eval mode (train=False: cuDNN's inference forward), fitted
# on the eval windows of validate/device/rnn_packed_probe.py's 300 shapes
# and checked on 300 others (tests/data/record/rnn_ws_packed_eval.tsv):
# no term for the input beyond H, and the RNN's per-row term about half
# of training's.  Tacotron 2's validation (its packed encoder BiLSTM in
# eval) took the training figure: 15% above the H100's workspace.
PACKED_EVAL = {("lstm", 1): (3.98, 0.0, 8.98), ("lstm", 2): (12.04, 0.0, 20.2),
               ("gru", 1): (3.0, 0.0, 4.91), ("gru", 2): (10.04, 0.48, 10.04),
               ("rnn_tanh", 1): (0.99, 0.0, 1.76),
               ("rnn_tanh", 2): (6.12, 0.0, 5.95)}


def packed_workspace_bytes(mode, N, B, I, H, L, D, s, weights, train=True):
    """The workspace of packed input of N rows, batch_sizes[0] = B
    (PACKED), with dropout or without: bentrevett's sentiment BiLSTM
    (dropout 0.5 between its two layers) freed 1,074,463,488 bytes in its
    backward on the H100, the rule without dropout 1,061,770,112 for its
    69,920 rows (padded input's rule adds a layer output with
    dropout)."""
    a, b, c = (PACKED if train else PACKED_EVAL)[
        ("rnn_tanh" if mode == "rnn_relu" else mode, D)]
    return L * D * 8388608 + weights + \
        int(s * (N * (a * H + b * max(I - H, 0)) + c * B * H))


def packed_reserve_bytes(mode, N, T, B, H, L, D, s, dropout):
    """The reserve of packed input: the padded rule's for N rows; with
    dropout, two bits per element of the L-1 dropped layer outputs of
    the padded T x B steps (the sentiment BiLSTM's reserve on the H100,
    T 256, B 512, H 300, to the byte; one program, the only packed
    probe with dropout)."""
    n = reserve_bytes(mode, N, 1, H, L, D, s, False)
    if dropout:
        n += (T * B * D * H * (L - 1) + 3) // 4
    return n


# Large hidden sizes (fp16 and fp32; the 153 large-H probes of
# tests/data/record/rnn_ws.tsv and the 180 of rnn_ws_packed.tsv's padded
# column, least squares of the relative error): the small-H rule's form,
# per step a*H and b per input feature beyond H, and c*H once, for each
# batch row and byte (the 187 held out of rnn_ws_packed_heldout.tsv: LSTM
# median error 3.2% -> 1.2%, GRU 2.7% -> 1.1%, RNN 7.8% -> 4.4% against
# 5*T*B*d*H*s, which bf16 keeps: not probed at small sizes).  Few steps
# need the per-row term: a one-step GRU decoder at H 512 took 3.1 times
# 5*H*s per row on the H100.
LARGE_H = {"lstm": (5.16, 2.4, 21.71), "gru": (4.48, 2.59, 1.8),
           "rnn_tanh": (4.13, 26.33, 16.2), "rnn_relu": (4.13, 26.33, 16.2)}


# Eval mode (cuDNN's inference forward) of a plain RNN: its sequence
# term is a fraction of training's, by direction count (the median over
# the 79 RNN shapes of tests/data/record/rnn_ws_packed_eval.tsv's "fit"
# set, padded input).  LSTM and GRU keep training's (their medians 1.0
# and 0.97 where I <= H) without the term for the input beyond H, as
# packed input in eval mode (PACKED_EVAL): the 225 held-out LSTM and GRU
# shapes' median error 2.2% -> 1.0% (with LARGE_H).
EVAL_RNN = (0.48, 0.6)


def workspace_bytes(mode, T, B, I, H, L, D, s, dropout, weights,
                    bf16=False, train=True):
    """WEIGHTS: the weight space's bytes (weight_space_bytes, or the
    flat buffer's size); I the input's features; BF16: bf16 tensors
    (not probed at small sizes: the large-H rule); TRAIN: the module's
    mode (EVAL_RNN)."""
    a, b, c, below = SMALL_H[mode]
    small = H < below and not bf16
    # bidirectional: the sequence term is not twice the one-direction
    # one (BIDIR below)
    d = 1 if D == 1 else BIDIR[0 if small else 1]
    if bf16:
        seq = 5 * T * B * d * H * s
    else:
        if not small:
            a, b, c = LARGE_H[mode]
        if not train and MODES[mode][0] != "RNN":
            b = 0       # (EVAL_RNN)
        seq = B * d * s * (T * (a * H + b * max(I - H, 0)) + c * H)
    if not train and MODES[mode][0] == "RNN":
        seq *= EVAL_RNN[D - 1]
    n = L * D * 8388608 + weights + int(seq)
    if dropout:
        n += T * B * D * H * s
    return n


def install(torch, rec, sms):
    """Patches torch._VF's RNN entry points and RNNBase.flatten_parameters
    for fake CUDA tensors; returns the function that undoes it."""
    from torch._subclasses.fake_tensor import FakeTensor
    VF = torch._VF
    state = {"dropout": None}

    def fake_cuda(t):
        return isinstance(t, FakeTensor) and t.device.type == "cuda"

    def values():
        return getattr(getattr(rec, "known", None), "values", None)

    def vf_values(cfg, tensors, grads=None):
        """The RNN's outputs (out, hy[, cy]) computed on the CPU by
        torch._VF's own function from the shadows of TENSORS (input, hx,
        cx, *weights), or None where one has none; with GRADS (the
        outputs' gradients, real) the gradients of TENSORS instead
        (None for cx absent), by the CPU's autograd.  Not with dropout
        between layers (its draws are the GPU's)."""
        vs = values()
        orig, bias, L, p, train, bidir, bf, lstm = cfg["vf"]
        if vs is None or (train and p > 0 and L > 1):
            return None
        bs = cfg["batch_sizes"]

        def call(x, h, ws):
            if bs is None:
                return orig(x, h, ws, bias, L, p, train, bidir, bf)
            return orig(x, torch.tensor(bs), h, ws, bias, L, p, train,
                        bidir)
        reals = [None if t is None else vs.real(t) for t in tensors]
        if any(r is None for i, r in enumerate(reals)
               if tensors[i] is not None):
            return None
        with vs.unset():
            if grads is None:
                x, hx, cx = reals[0], reals[1], reals[2]
                ws = reals[3:]
                h = (hx, cx) if lstm else hx
                return call(x, h, ws)
            with torch.enable_grad():
                rs = [None if r is None else
                      r.detach().clone().requires_grad_() for r in reals]
                h = (rs[1], rs[2]) if lstm else rs[1]
                res = call(rs[0], h, rs[3:])
                outs = [res[0], res[1]] + ([res[2]] if lstm else [])
                pairs = [(o, g) for o, g in zip(outs, grads)
                         if g is not None]
                wanted = [r for r in rs if r is not None]
                got = torch.autograd.grad(
                    [o for o, _ in pairs], wanted,
                    [g for _, g in pairs], allow_unused=True)
            it = iter(got)
            return [None if r is None else next(it) for r in rs]

    def set_values(ts, rs):
        """Shadows RS for the fake TS (a None either side: skipped); where
        RS is None the fake outputs of an RNN whose values are not had
        lose the zeros --values cpu gave their empty tensors."""
        vs = values()
        if vs is None:
            return
        for i, t in enumerate(ts):
            if not isinstance(t, torch.Tensor):
                continue
            r = None if rs is None else rs[i]
            if r is None:
                vs.shadow.pop(t, None)
                continue
            if r.dtype != t.dtype:
                with vs.unset():
                    r = r.to(t.dtype)
            vs._set(t, vs._layout(t, r))

    def temp(nbytes, site):
        key = object()
        rec.alloc(nbytes, "temporary", site, key=key)
        rec.free(key)

    def flat_buffer(ws):
        """The storage all of WS view in order, or None."""
        try:
            st = ws[0].untyped_storage()
            off = 0
            for w in ws:
                if w.untyped_storage() is not st or \
                        w.storage_offset() != off or not w.is_contiguous():
                    return None
                off += w.numel()
            if off * ws[0].element_size() != st.nbytes():
                return None
            return torch.empty(0, dtype=ws[0].dtype, device=ws[0].device) \
                .set_(st, 0, (off,), (1,))
        except Exception:
            return None

    class _CastInto(torch.autograd.Function):
        """A weight copied into its place in the fp16 flat buffer
        (_copyParams under autocast): backward casts its gradient back."""
        @staticmethod
        def forward(ctx, w, view):
            ctx.dtype = w.dtype
            return view.view_as(view)

        @staticmethod
        def backward(ctx, g):
            return g.to(ctx.dtype), None

    class CudnnRnn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, cfg, input, hx, cx, wbuf, *weights):
            bf, mode = cfg["batch_first"], cfg["mode"]
            x = input.transpose(0, 1) if bf else input
            H, L, D = cfg["hidden"], cfg["layers"], cfg["dirs"]
            bs = cfg["batch_sizes"]
            if bs is None:
                T, B = x.shape[0], x.shape[1]
                rows = (T, B)
            else:
                # packed (TensorDescriptorListParams): seq_length steps
                # of mini_batch = batch_sizes[0] rows, the data
                # batch_sizes_sum rows, as the output
                T, B = len(bs), int(bs[0])
                rows = (x.shape[0],)
            x = x.contiguous()
            output = torch.empty(rows + (D * H,), dtype=x.dtype,
                                 device=x.device)
            hy = torch.empty(hx.shape, dtype=hx.dtype, device=hx.device)
            cy = torch.empty(cx.shape, dtype=cx.dtype, device=cx.device) \
                if cx is not None else None
            if wbuf is None:
                # _cudnn_rnn: weights that are not one flat buffer are
                # copied into a new one (at::empty, zero_, _copyParams).
                wbuf = torch.zeros(sum(w.numel() for w in weights),
                                   dtype=x.dtype, device=x.device)
            s = x.element_size()
            drop = cfg["train"] and cfg["dropout"] > 0 and L > 1
            nw = sum(w.numel() for w in weights) * s
            if bs is None:
                ws = workspace_bytes(mode, T, B, int(x.shape[-1]), H, L, D,
                                     s, drop, nw, x.dtype == torch.bfloat16,
                                     cfg["train"])
            else:
                N = int(x.shape[0])
                ws = packed_workspace_bytes(mode, N, B, int(x.shape[-1]),
                                            H, L, D, s, nw, cfg["train"])
            # _cudnn_rnn: the workspace, then the reserve, both at::empty;
            # the workspace is freed on return, after the reserve is made.
            wkey = object()
            rec.alloc(ws, "temporary", "cudnn _cudnn_rnn workspace", key=wkey)
            reserve = None
            if cfg["train"]:
                reserve = torch.empty(
                    reserve_bytes(mode, T, B, H, L, D, s, drop)
                    if bs is None else
                    packed_reserve_bytes(mode, N, T, B, H, L, D, s, drop),
                    dtype=torch.uint8, device=x.device)
            rec.free(wkey)
            del x
            ctx.cfg = cfg
            ctx.shapes = (T, B, s, ws)
            ctx.save_for_backward(input, hx, cx, output, reserve, wbuf,
                                  *weights)
            out = output.transpose(0, 1) if bf else output
            if cy is None:
                return out, hy
            return out, hy, cy

        @staticmethod
        def backward(ctx, g_out, g_hy, g_cy=None):
            cfg = ctx.cfg
            bf = cfg["batch_first"]
            T, B, s, ws = ctx.shapes
            input, hx, cx, output, reserve, wbuf = ctx.saved_tensors[:6]
            weights = ctx.saved_tensors[6:]
            # _cudnn_rnn_backward_input
            x = (input.transpose(0, 1) if bf else input).contiguous()
            dy = (g_out.transpose(0, 1) if bf else g_out).contiguous()
            dx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
            dhx = torch.empty(hx.shape, dtype=hx.dtype, device=hx.device)
            dcx = torch.empty(cx.shape, dtype=cx.dtype, device=cx.device) \
                if cx is not None else None
            temp(ws, "cudnn _cudnn_rnn_backward_input workspace")
            del x, dy
            # _cudnn_rnn_backward_weight
            x = (input.transpose(0, 1) if bf else input).contiguous()
            dw = torch.zeros(wbuf.shape, dtype=wbuf.dtype,
                             device=wbuf.device)
            # cuDNN writes the gradients into dw: its zeros are not what
            # the weights' gradients hold (a gradient norm read them 0)
            known = getattr(rec, "known", None)
            if known is not None:
                known.rewritten([id(dw.untyped_storage())])
            temp(ws, "cudnn _cudnn_rnn_backward_weight workspace")
            del x
            grads, off = [], 0
            for w in weights:
                grads.append(dw[off:off + w.numel()].view(w.shape))
                off += w.numel()
            del dw
            if bf:
                dx = dx.transpose(0, 1)
            vs = values()
            if vs is not None and cfg.get("vf") is not None:
                gs = [vs.real(g) if isinstance(g, torch.Tensor) else None
                      for g in (g_out, g_hy, g_cy)]
                r = None
                if gs[0] is not None:
                    r = vf_values(cfg, [input, hx, cx] + list(weights), gs)
                set_values([dx, dhx, dcx] + grads, r)
            need = ctx.needs_input_grad
            return (None, dx if need[1] else None,
                    dhx if need[2] else None,
                    dcx if need[3] else None, None) + tuple(grads)

    def make(name):
        orig = getattr(VF, name)
        lstm = name == "lstm"

        def split(args):
            """(input, batch_sizes, h, params, rest, batch_first) of a
            call: unpacked input, lstm(input, (hx, cx), params,
            has_biases, num_layers, dropout, train, bidirectional,
            batch_first) and gru/rnn_*(input, hx, params, ...); packed
            (the overloads .data), lstm(data, batch_sizes, (hx, cx),
            params, has_biases, num_layers, dropout, train,
            bidirectional), batch_sizes a host tensor.  None for any
            other call."""
            if len(args) != 9:
                return None
            if isinstance(args[1 if lstm else 2], (list, tuple)):
                return (args[0], None, args[1], args[2], args[3:8],
                        args[8])
            bs = args[1]
            if isinstance(bs, torch.Tensor) and not isinstance(
                    bs, FakeTensor) and bs.dim() == 1 and bs.numel() and \
                    isinstance(args[3], (list, tuple)):
                return (args[0], tuple(bs.tolist()), args[2], args[3],
                        args[4:9], False)
            return None

        def cudnn(args, kwargs):
            """The call split (split) where the cuDNN path runs, else None
            (PyTorch's own function): a fake CUDA input of cuDNN's dtypes,
            not an LSTM with projections."""
            call = None if kwargs else split(args)
            if call is None or not fake_cuda(call[0]) or \
                    not torch.backends.cudnn.enabled or \
                    call[0].dtype not in (torch.float16, torch.bfloat16,
                                          torch.float32, torch.float64):
                return None
            hx = call[2][0] if lstm else call[2]
            if hx.shape[-1] != call[3][1].shape[-1]:    # proj_size
                return None
            return call

        def f(*args, **kwargs):
            if jittrace.state(torch) is None:
                call = cudnn(args, kwargs)
                if call is None:
                    return orig(*args, **kwargs)
                return run(call)
            # under torch.jit.trace: the node aten::lstm (gru, ...) a CUDA
            # run's graph has, its cuDNN tensors made untraced
            with jittrace.paused(torch):
                call = cudnn(args, kwargs)
            if call is None:
                return orig(*args, **kwargs)
            op = getattr(torch.ops.aten, name)
            op = op.input if call[1] is None else op.data
            return jittrace.call(torch, op, args, {}, lambda: run(call))

        def run(call):
            input, bs, h, params, rest, bf = call
            bias, L, p, train, bidir = rest
            hx, cx = (h[0], h[1]) if lstm else (h, None)
            D = 2 if bidir else 1
            cfg = {"mode": name, "batch_first": bool(bf), "hidden":
                   int(hx.shape[-1]), "layers": int(L), "dirs": D,
                   "dropout": float(p), "train": bool(train),
                   "batch_sizes": bs}
            if train and p > 0 and state["dropout"] is None:
                # get_dropout_state: a scalar, then the states, cached for
                # the process.
                temp(8, "cudnn get_dropout_state")
                state["dropout"] = torch.empty(
                    49152 * sms, dtype=torch.uint8, device=input.device)
                rec.relabel(state["dropout"], "other",
                            "cudnn dropout states")
            params = list(params)
            wbuf = None
            if torch.is_autocast_enabled("cuda") and \
                    params[0].dtype in (torch.float32,) and \
                    input.is_floating_point():
                # _cudnn_rnn_cast_reflatten: fp16 (kHalf), whatever the
                # autocast dtype.
                half = torch.float16
                wbuf = torch.zeros(sum(w.numel() for w in params),
                                   dtype=half, device=input.device)
                views, off = [], 0
                for w in params:
                    v = wbuf.detach()[off:off + w.numel()].view(w.shape)
                    off += w.numel()
                    views.append(_CastInto.apply(w, v))
                params = views
                with torch.autocast("cuda", enabled=False):
                    if cx is not None:
                        cx = cx.to(half)
                    hx = hx.to(half)
                    input = input.to(half)
            else:
                wbuf = flat_buffer(params)
            cfg["vf"] = (orig, bias, int(L), float(p), bool(train),
                         bool(bidir), bool(bf), lstm)
            if wbuf is not None and wbuf.dtype != params[0].dtype:
                cfg["vf"] = None        # (autocast's fp16 copy: not had)
            with torch.autocast("cuda", enabled=False):
                out = CudnnRnn.apply(cfg, input, hx, cx, wbuf, *params)
            # the values (--values cpu, or small shadows under the rules)
            r = vf_values(cfg, [input, hx, cx] + params) \
                if cfg["vf"] is not None else None
            set_values(list(out), None if r is None else
                       [r[0], r[1]] + ([r[2]] if lstm else []))
            return out

        return orig, f

    saved = {}
    for name in MODES:
        orig, f = make(name)
        saved[name] = orig
        setattr(VF, name, f)

    RNNBase = torch.nn.RNNBase
    orig_flatten = RNNBase.flatten_parameters

    def flatten_parameters(self):
        ws = getattr(self, "_flat_weights", None)
        if not ws or len(ws) != len(self._flat_weights_names) or \
                not all(isinstance(w, torch.Tensor) for w in ws) or \
                not fake_cuda(ws[0]):
            return orig_flatten(self)
        dt = ws[0].dtype
        if dt not in (torch.float16, torch.float32, torch.float64) or \
                any(w.dtype != dt or not fake_cuda(w) for w in ws) or \
                not torch.backends.cudnn.enabled or \
                getattr(self, "proj_size", 0):
            return
        if len({(id(w.untyped_storage()), w.storage_offset())
                for w in ws}) != len(ws):
            # aliasing weights (unique_data_ptrs): the copying path.
            # Views of one buffer are not aliases: a module already
            # flat is flattened again into a new buffer, the old one
            # freed with its last view (tacotron2's .cuda().half() and
            # its encoder's flatten_parameters() at each inference).
            return
        vs = values()
        reals = [vs.real(w) for w in ws] if vs is not None else [None]
        with torch.no_grad():
            buf = torch.zeros(sum(w.numel() for w in ws), dtype=dt,
                              device=ws[0].device)
            off = 0
            for w in ws:
                n = w.numel()
                buf[off:off + n].view(w.shape).copy_(w)
                w.set_(buf.untyped_storage(), off, w.shape, w.stride())
                off += n
        if all(r is not None for r in reals):
            # the weights' values go on as views of the buffer's
            with vs.unset():
                rb = torch.cat([r.reshape(-1) for r in reals])
            vs._set(buf, rb)
            off = 0
            for w in ws:
                with vs.unset():
                    v = rb[off:off + w.numel()].view(w.shape)
                vs._set(w, v)
                off += w.numel()
        rec.relabel(buf, "parameter", "flatten_parameters (cuDNN flat weights)")
        self._flat_weight_refs = [weakref.ref(w) for w in ws]

    RNNBase.flatten_parameters = flatten_parameters

    def undo():
        for name, orig in saved.items():
            setattr(VF, name, orig)
        RNNBase.flatten_parameters = orig_flatten

    return undo
