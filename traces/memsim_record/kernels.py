"""Kernels' own temporaries under --fake: what a CUDA kernel allocates
through the caching allocator and frees before it returns, which fake
tensors (meta kernels) never show.  Pure functions of shapes, no torch:
each returns the kernel's events in order, ("alloc", tag, bytes) and
("free", tag); the recorder puts them after the op's outputs (category
temporary, site the kernel).

Where the figures come from.  Measured on the project's H200 (sm90,
torch 2.11.0+cu130, cuDNN 9.19, 2026-12-01) from allocator traces: a
probe grid of 600 Conv2d calls (forward and backward; fp16 and bf16
autocast and fp32; channels 3..512, spatial 8..256, kernel 1/3/7, stride
1/2, batch 1..64, 1 in 4 with a channels_last input) and 346
scaled_dot_product_attention calls (cuDNN, memory-efficient and flash
backends; batch 1..32, heads 1..32, sequence 64..4096, head_dim
32..128), and the C++ frames of real snapshots of the workloads of
tests/recorder/workloads.py (README, "Predicting from a program").  The
size rules were chosen on half of the convolution grid and checked on
the other half (README gives the held-out error).

Convolutions.  run_conv_plan() (aten/src/ATen/native/cudnn/Conv_v8.cpp)
allocates plan.getWorkspaceSize() bytes from the caching allocator, runs
the plan and frees it: one workspace per cudnn_convolution_forward /
_backward_input / _backward_weight call, on the current stream, freed
before the op returns.  Without cudnn.benchmark the plan is the first of
cuDNN's heuristic list that runs (try_configs(): an engine whose
workspace allocation fails is skipped), so the size is cuDNN's choice;
what the H200 showed is that it follows the layout:
- NCHW tensors: the engines cuDNN picks on sm90 work in NHWC, and their
  workspace holds the transposed operands: forward input + weight +
  output bytes, backward-data the same three, backward-weight the same
  plus split-K partial sums of the weight gradient in fp32 (3 weight
  gradients' worth, the median of the grid; 13 for the CNN's first
  layers, 0 for many).  A 1x1 kernel's weight needs no transpose (input
  + output), and a 1x1 stride-1 convolution is a plain GEMM on NCHW: no
  workspace forward or backward-data, 16 fp32 weight gradients of
  split-K partials backward-weight.  Fewer than 8 input channels (an
  image's 3): no forward workspace (35 of the grid's 60 such
  convolutions had none; the others about input + weight + output).
- channels_last input (NHWC, native): forward and backward-weight copy
  the NCHW weight to channels_last (weight->contiguous(memory_format) in
  cudnn_convolution_forward_out / backward_weight_out: weight bytes),
  backward-data nothing.
Not measured (no temporaries modelled): grouped and depthwise
convolutions, transposed convolutions, 1-D and 3-D convolutions.  Other
devices: the sm90 rules are assumed for sm70 and newer (the NHWC tensor
core engines), nothing for older devices.

Attention.  _cudnn_attention_forward / run_cudnn_SDP_fprop
(aten/src/ATen/native/cudnn/MHA.cpp): a 256-byte workspace;
run_cudnn_SDP_bprop: a workspace of B*H*Sq*D*4 (dQ accumulated in
fp32) + B*H*Sq*4 + 256 bytes (139 of 139 probes exact).
_efficient_attention_backward (attention_backward.cu): delta
(B*H*Sq floats) and a workspace of B*H*pad64(Sq)*Dk*4 + B*H*pad64(Sq)/4
bytes (Dk: head_dim rounded up to 64 or 128); fp32 adds a second B*H*Sq
float buffer and one of the query's size, in this order (the encoder-
decoder's snapshot).  _flash_attention_backward: softmax_d, B*H*pad128(Sq)
floats, and dq_accum, B*H*pad128(Sq)*pad32(D) floats (measured with the
flash backend forced on sm90; what sm80 runs).
"""


def _prod(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _pad(x, m):
    return (x + m - 1) // m * m


def conv(phase, x_shape, w_shape, y_shape, itemsize, stride, padding,
         dilation, transposed, groups, channels_last, weight_cl, major):
    """Events of one cuDNN convolution call; PHASE is forward, data
    (backward input) or weight (backward weight)."""
    if major < 7 or transposed or groups != 1 or len(x_shape) != 4:
        return []
    x = _prod(x_shape) * itemsize
    y = _prod(y_shape) * itemsize
    w = _prod(w_shape) * itemsize
    w32 = _prod(w_shape) * 4
    if channels_last:
        size = w if phase in ("forward", "weight") and not weight_cl else 0
    else:
        one = all(int(k) == 1 for k in w_shape[2:])
        unit = all(int(s) == 1 for s in stride) and \
            all(int(p) == 0 for p in padding) and \
            all(int(d) == 1 for d in dilation)
        if one and unit:
            size = 16 * w32 if phase == "weight" else 0
        elif phase == "forward" and int(x_shape[1]) < 8:
            size = 0
        elif one:
            size = x + y + (w32 if phase == "weight" else 0)
        else:
            size = x + w + y + (3 * w32 if phase == "weight" else 0)
    if size <= 0:
        return []
    return [("alloc", "ws", size), ("free", "ws")]


def attention_backward(kind, b, h, sq, d, itemsize):
    """Events of one attention backward kernel; KIND is cudnn, efficient
    or flash; shapes of the query (B, H, Sq, D)."""
    if kind == "cudnn":
        return [("alloc", "ws", b * h * sq * d * 4 + b * h * sq * 4 + 256),
                ("free", "ws")]
    if kind == "flash":
        s = _pad(sq, 128)
        return [("alloc", "softmax_d", b * h * s * 4),
                ("alloc", "dq_accum", b * h * s * _pad(d, 32) * 4),
                ("free", "dq_accum"), ("free", "softmax_d")]
    if kind == "efficient":
        s = _pad(sq, 64)
        dk = 64 if d <= 64 else _pad(d, 128)
        ws = b * h * s * dk * 4 + b * h * s // 4
        delta = b * h * sq * 4
        if itemsize == 4:
            return [("alloc", "q", b * h * sq * d * itemsize),
                    ("alloc", "delta", delta), ("alloc", "delta2", delta),
                    ("free", "delta"), ("free", "q"),
                    ("alloc", "ws", ws), ("free", "delta2"), ("free", "ws")]
        return [("alloc", "delta", delta), ("alloc", "ws", ws),
                ("free", "delta"), ("free", "ws")]
    return []


def attention_forward(kind):
    """Events of one attention forward kernel beyond its outputs."""
    if kind == "cudnn":
        return [("alloc", "ws", 256), ("free", "ws")]
    return []
