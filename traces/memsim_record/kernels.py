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
tests/recorder/workloads.py (docs/recording.md, "memsim record"), and
821 more backward-weight calls on NCHW inputs (C = K swept against N*P*Q,
C != K, the three dtypes, 5x5 and 7x7, the workloads' layers).  The
size rules were chosen on half of each convolution grid and checked on
the other half (docs/recording.md, "memsim record", gives the held-out
error).

Convolutions.  run_conv_plan() allocates plan.getWorkspaceSize() bytes
from the caching allocator, runs the plan and frees it: one workspace
per cudnn_convolution_forward / _backward_input / _backward_weight call,
on the current stream, freed
before the op returns.  Without cudnn.benchmark the plan is the first of
cuDNN's heuristic list that runs (try_configs(): an engine whose
workspace allocation fails is skipped), so the size is cuDNN's choice;
what the H200 showed is that it follows the layout:
- NCHW tensors: the engines cuDNN picks on sm90 work in NHWC, and their
  workspace holds the transposed operands: forward input + weight +
  output bytes, backward-data the same three, backward-weight the same
  plus split-K partial sums of the weight gradient in fp32 (_split_k()
  below: 0 to 13 slices, by the GEMM's tile grid and reduction length).
  A 1x1 kernel's weight needs no transpose (input
  + output), and a 1x1 stride-1 convolution is a plain GEMM on NCHW: no
  workspace forward or backward-data, 16 fp32 weight gradients of
  split-K partials backward-weight.  Fewer than 8 input channels (an
  image's 3): no forward workspace (35 of the grid's 60 such
  convolutions had none; the others about input + weight + output).
- channels_last input (NHWC, native): forward and backward-weight copy
  the NCHW weight to channels_last (weight->contiguous(memory_format) in
  cudnn_convolution_forward_out / backward_weight_out: weight bytes),
  backward-data nothing.  fp32 backward-weight also holds input +
  output (the engines cuDNN picks for fp32 transpose them: 38 of the
  grid's 59 fp32 channels_last calls had 0.9 times the output or more).
cudnn.benchmark's find (Dispatch.cudnn_find: the first call of each
key in a thread allocates the largest workspace of cuDNN's candidate
plans, get_plans_from_find, frees it and empties the cache before the
chosen plan runs): the largest candidate is cuDNN's (the 80 finds of
tests/data/record/cudnn_find.tsv 0.24 to 97 times the operands, median
2.2); the find takes the larger of the chosen plan's size (the rules
below) and, for fp32 convolutions of stride 1 (backward-weight, "same"
backward-data and NCHW forward) and stride-2 backward-data (dcgan's 2.7
GB), cuDNN's FFT engines' (conv_find_rule; 1-d convolutions' forward
and backward-weight in their height-1 view; only where it fits in free
memory, Dispatch._find_fits), else the plan's, a lower bound, and the
recorder notes one assumption cudnn:benchmark-find a key.
Not modelled: fp32 backward-weight engines with workspaces of hundreds of
MB unrelated to the operands (a few 5x5 and 7x7 or short-reduction
calls of the grids; many of them cuDNN's FFT, fft_weight() below, which
the heuristics take for 3x3 calls in the region of fft_weight_chosen(),
the only ones modelled).
cuDNN's FFT engine (fp32 NCHW forward, stride 1, kernels of 7 and more):
its workspace is exactly fft_forward() below (109 of 109 such H200 calls
of validate/device/conv2d_kernel_probe.py, tests/data/record/conv_fft.tsv;
TimesNet's Inception blocks: 195 MiB for a 96 x 2 image of 32 channels),
but which shapes cuDNN's heuristics give it is cuDNN's own: 109 of 337
fp32 calls of kernels 7 to 11, 1 of 101 of 5, none of 3, and no function
of the shapes found (32 x 16 x 96 x 2 -> 32 channels never, the mirror
32 -> 16 always, the same FLOPs and transforms).  The recording keeps
the rule's plan and notes an assumption cudnn:fft-possible a shape with
the FFT's workspace (Dispatch._ev_conv).
Half-precision NCHW: the transposed weight and output have K padded
to a multiple of 8 (forward and backward-data; the grid's K = 4 calls).
Not measured (no temporaries modelled): grouped and depthwise
convolutions.  1-D convolutions run as 2-D of height 1 (their probe,
validate/device/conv1d_probe.py: the pointwise weight gradient's own
rule below).  Other
devices: the sm90 rules are assumed for sm70 and newer (the NHWC tensor
core engines), nothing for older devices.

Real programs (tests/data/record/conv_real_ws.tsv: 1268 fp32 NCHW calls
of five programs' H200 snapshots, each matched to its recorded call;
tests/recorder_kernels.sh prints the figures).  Backward-data: 135 of
185 calls in the rule's block.  Forward: 537 of 793; the others are
engines that write the output in NCHW, a workspace of x + w + 16 (the
largest outputs of a 7x7 UNet at batch 128 and 16, a 3x3 at batch 64,
but the same convolutions at other batches and the mirror-image
512 -> 256 vs 256 -> 512 layers do transpose it: no rule of the
operands), and fp32 K not a multiple of 4 (K = 1, 9), where 4 of 6
calls pad K to 4 in w and y and 2 do not.  Backward-weight: none in the
rule's block (-17% summed); 7 of 14 shapes are x + y + w + S weights
(fp32) + at most 2 KB with an integer S (26, 13, 13, 8, 5, 0 for the UNet's
7x7 layers at N*P*Q = 100352, 54 for a 3x3 at 36864, where _split_k()
gives 2 to 7), as are 73 of the 217 fp32 calls of conv_wgrad.tsv and
conv_real_ws.tsv (S from 1 to 69, no function of N*P*Q, K or C*R*S
found): fp32's split-K takes other slice counts than the
half-precision grid's; and 3 of 4 calls with fewer than 8 input
channels had none (the grid's fp32 ones mostly have one).  None of
these changes the rules yet.

Attention.  _cudnn_attention_forward / run_cudnn_SDP_fprop: a 256-byte
workspace;
run_cudnn_SDP_bprop: a workspace of B*H*Sq*D*4 (dQ accumulated in
fp32) + B*H*Sq*4 + 256 bytes (139 of 139 probes exact).
_efficient_attention_backward (the CUTLASS kernels of cutlassB.h), as
PyTorch computes it (efficient_kernel(), efficient_workspace()): the
first kernel of dispatch_cutlassB's sm80 list that fits the head
dimension, dropout and sequence alignment; its workspace_size(), the
grad_q accumulator tiles of each query block (fp16/bf16 kernels that
keep no output in registers add gK/gV staging by num_splits_key); before
it delta, at::empty({B, H, Sq}) fp32 for fp16/bf16, or for fp32 the
product grad_out * out, its sum and a (B, H, Sq) copy (no copy with one
head).  Checked on 686 efficient calls (fp32, fp16, bf16; head
dimensions 32 to 256 including 40, 96, 100, 112, 160, 192; Sq != Sk,
Dv != D, masks, bias gradients, dropout, causal), every allocation and
free in order (tests/data/record/sdpa_eff_bwd.tsv).  Other devices:
the sm80 list is assumed (sm70/sm75 have their own, of 64x64 tiles;
a GPU with less shared memory than the H200 may skip a kernel).
_flash_attention_backward (mha_bwd): softmax_d, B*H*pad128(Sq) floats,
and dq_accum, B*H*pad128(Sq)*Dr floats, Dr the head dimension rounded to
8 then to 32 (up to 128) or 64 (measured with the
flash backend forced on sm90; what sm80 runs).
"""

import math


def _prod(shape):
    n = 1
    for s in shape:
        n *= symsize(s)
    return n


def _pad(x, m):
    return (x + m - 1) // m * m


def _split_k(w_shape, y_shape, sms):
    """Backward-weight's split-K partial sums (NCHW, a kernel larger than
    1x1).  The weight gradient is a GEMM of K x C*R*S outputs reduced over
    N*P*Q; the engine cuDNN ranks first splits that reduction into S
    slices, each adding an fp32 partial sum of the K x C*R*S outputs (K
    padded to the 64-row tile) to the workspace.  What the H200's grid
    (tests/data/record/conv_wgrad.tsv) showed S to follow: no more slices
    than two waves of the output's 128 x 128 tiles fill (2 * SMs / tiles),
    sqrt(N*P*Q) / 42 (3 slices at N*P*Q = 16384, 6 at 65536, 12 at
    262144), at most 13, and none below 2."""
    k = symsize(w_shape[0])
    crs = _prod(w_shape[1:])
    npq = symsize(y_shape[0]) * _prod(y_shape[2:])
    if type(k) is int and type(crs) is int and type(npq) is int:
        return split_k_rule(k, crs, npq, sms)
    # --symbolic: evaluated per value where the trace is instantiated
    # (traces/symtrace.c), its floor of a square root no guard here
    return _RULE[0]("conv_split_k", (k, crs, npq, sms))


def _fft_tile(x_shape, padding):
    """The bytes of one complex frequency tile of cuDNN's FFT engine:
    F x (F/2 + 1) values of 16 bytes, F the padded image's larger side
    rounded up to a power of two, at least 16."""
    h, w = int(x_shape[2]), int(x_shape[3])
    f = 16
    while f < max(h + 2 * int(padding[0]), w + 2 * int(padding[1])):
        f *= 2
    return 16 * f * (f // 2 + 1)


def fft_forward(x_shape, w_shape, padding):
    """The workspace of cuDNN's FFT engine for an fp32 NCHW forward
    convolution of stride 1: the weight (W bytes) and, in frequency tiles
    (_fft_tile), the larger of the input's and filter's transforms
    together (N*C + K*C tiles) and the output's (N*K) (measured with
    "same" padding: H + 2*pad = H + R - 1)."""
    n, c = int(x_shape[0]), int(x_shape[1])
    k, r, s = int(w_shape[0]), int(w_shape[2]), int(w_shape[3])
    return k * c * r * s * 4 + \
        max(n * c + k * c, n * k) * _fft_tile(x_shape, padding)


def fft_covers(x_shape, w_shape, y_shape, stride, dilation, chosen):
    """Whether cudnn.benchmark's find of a forward convolution whose
    filter covers its input has cuDNN's FFT engine (fft_forward) among
    its candidates, or with CHOSEN, as the plan it picks.  Such is the
    weight gradient of a convolution's double backward:
    _convolution_double_backward computes gW as at::convolution(ggI^T,
    gO^T), batch and channels swapped (X is C x N x H x W, the filter K
    x N x H x W), the output gradient's H x W the filter and the
    weight's R x S (the padding's excess narrowed off) the output.
    Covering: stride and dilation 1, a filter larger than the output in
    each spatial dimension.  Candidate: a filter of 16 or more, or of 8
    or more where K*C is at most 4,096.  Chosen: a filter of 16 or
    more where K*C is 512 to 1,024 or C at most 4 (an image's
    channels).  Measured (cuDNN 9.19, fp32 NCHW, 3x3 layers of padding
    1 unless said): on the H200, AdaHessian's WRN-10-2 at batch 128 (an
    H200 snapshot): the FFT the largest candidate for filters of 32
    (16 -> 32 and 32 -> 32 channels, 16 -> 32 of 1x1) and 16 (64 ->
    64), not for 8 (128 -> 128), and the plan for those of 32 alone;
    on the H100 (validate/device/conv_hvp_probe.py, batches 64 to 128;
    tests/data/record/conv_hvp_h100.tsv): a candidate at 16 -> 16, 32
    -> 32, 3 -> 16 and 16 -> 32 at 32 x 32, 32 -> 32 and 64 -> 64 at 16
    x 16, 64 -> 64 at 8 x 8, not 128 -> 128 at 8 x 8; the plan at 32 ->
    32 (filters of 32 and 16), 3 -> 16 and 16 -> 32, not 16 -> 16 at 32
    x 32 nor 64 -> 64 or 128 -> 128 (every batch alike).  The plan is
    the fastest candidate cuDNN timed: the bounds are those of the
    layers measured.  Without cudnn.benchmark cuDNN's heuristics gave
    the rules' plan (x + w + y + 16) to every such call (PyHessian's
    ResNet-20 at batch 100 on the H200, to the byte; the H100 probe's
    27).  Integers only (False under --symbolic where a size is
    symbolic: the rules' plan)."""
    if len(x_shape) != 4 or any(type(symsize(v)) is not int for v in
                                tuple(x_shape) + tuple(w_shape) +
                                tuple(y_shape)):
        return False
    if not (all(int(v) == 1 for v in tuple(stride) + tuple(dilation)) and
            all(int(r) > int(p) for r, p in zip(w_shape[2:],
                                                y_shape[2:]))):
        return False
    f = min(int(r) for r in w_shape[2:])
    kc = int(w_shape[0]) * int(x_shape[0])
    if chosen:
        return f >= 16 and (512 <= kc <= 1024 or int(x_shape[0]) <= 4)
    return f >= 16 or (f >= 8 and kc <= 4096)


def fft_weight(x_shape, w_shape, padding):
    """The workspace of cuDNN's FFT engine for an fp32 NCHW
    backward-weight convolution of stride 1 (the descriptor's shapes: a
    transposed convolution's input is its output): the output gradient
    (Y bytes) and, in frequency tiles (_fft_tile), the larger of the
    input's and output gradient's transforms together (N*C + N*K tiles)
    and the weight gradient's (K*C).  On the H200 it is the largest
    candidate of every such find measured (tests/data/record/
    cudnn_find.tsv: 3x3, 5x5, 1x1 and dcgan's 4x4 layers, 13 of 13 to
    the byte; channels_last adds kernels.conv's transposed operands) and
    the workspace of each call of the heuristics' that takes the engine
    (tests/data/record/conv_fft_backward.tsv: 39 calls)."""
    n, c, h, w = (int(d) for d in x_shape)
    k = int(w_shape[0])
    ph, pw = int(padding[0]), int(padding[1])
    ho = h + 2 * ph - int(w_shape[2]) + 1
    wo = w + 2 * pw - int(w_shape[3]) + 1
    return n * k * ho * wo * 4 + \
        max(n * c + n * k, k * c) * _fft_tile(x_shape, padding)


def fft_data(x_shape, w_shape, padding):
    """The workspace of cuDNN's tiled FFT engine for an fp32 NCHW
    backward-data convolution of stride 1 (the descriptor's shapes):
    complex tiles of 32 x 17 values of 8 bytes, one a filter (K*C) and T
    an image of the output gradient and of the input gradient (N*K +
    N*C), T 1 where the padded image's larger side is at most 32, else
    2 (padded sides of 34 to 106 measured).  On the H200: 12 calls of
    the heuristics' (tests/data/record/conv_fft_backward.tsv, kernels 3
    to 11, "same" padding) and the largest candidate of cudnn.benchmark's
    finds of 3x3 and 5x5 "same" convolutions (tests/data/record/
    cudnn_find.tsv), to the byte."""
    n, c, h, w = (int(d) for d in x_shape)
    k = int(w_shape[0])
    side = max(h + 2 * int(padding[0]), w + 2 * int(padding[1]))
    t = 1 if side <= 32 else 2
    return 8 * 32 * 17 * (k * c + t * (n * k + n * c))


def fft_data_strided(x_shape, w_shape, padding):
    """The largest candidate of cudnn.benchmark's find of an fp32
    backward-data convolution of stride 2 (the descriptor's shapes;
    kernels of 3 to 7), a tiled FFT of its four phases: 32 x 17 tiles of
    8 bytes, four a filter (K*C) and an input gradient's (N*C), T an
    output gradient's (N*K), T 1 where the padded image's larger side
    halved is at most 32, else 2; each filter's phases, 4 x Q x Q fp32
    (Q = ceil(R/2), one more for an even kernel with odd padding: 3x3
    and 4x4 pad 1 give 2 and 3); the output gradient's images, a row
    and a column more where kernel and padding are both odd, and the
    input gradient's, in fp32; 16 bytes.  C counts in pairs (1 and 3
    channels as 2 and 4).  Measured on the H200 (validate/device/
    cudnn_find_probe.py, FIND_SET=stride2; tests/data/record/
    cudnn_find_stride2.tsv, and tests/data/record/cudnn_find.tsv's
    three): every find of a kernel of 3 to 7 to the byte (N 1 to 128, C
    1 to 1024, K 8 to 2048, sides 2 to 224) where it was a candidate
    (strided_fft_candidate() says where)."""
    n, c, h, w = (int(d) for d in x_shape)
    k, r, s = int(w_shape[0]), int(w_shape[2]), int(w_shape[3])
    ph, pw = int(padding[0]), int(padding[1])
    c += c % 2
    ho, wo = (h + 2 * ph - r) // 2 + 1, (w + 2 * pw - s) // 2 + 1
    t = 1 if max(h + 2 * ph + 1, w + 2 * pw + 1) // 2 <= 32 else 2
    qh = (r + 1) // 2 + (r % 2 == 0 and ph % 2 == 1)
    qw = (s + 1) // 2 + (s % 2 == 0 and pw % 2 == 1)
    ho += r % 2 == 1 and ph % 2 == 1
    wo += s % 2 == 1 and pw % 2 == 1
    return 8 * 32 * 17 * (4 * k * c + t * (n * k + 4 * n * c)) + \
        16 * qh * qw * k * c + 4 * (n * k * ho * wo + n * c * h * w) + 16


def strided_fft_candidate(n, c, k, h, w, r):
    """Whether fft_data_strided's engine is among the candidates of the
    find of a stride-2 backward-data convolution of N images of H x W,
    C channels (the input gradient's), K (the output gradient's) and a
    kernel of R rows.  PyTorch allocates the largest workspace of every
    plan cuDNN gives (get_plans_from_find -> generate_and_filter_plans:
    all the engine configs of cuDNN's heuristics, CUDNN_HEUR_MODE_INSTANT,
    and of its fallback list, less filterEngineConfigs' and the errata's,
    within get_available_workspace(), the caching allocator's
    cacheInfo(): at least the device's free memory);
    torch.backends.cudnn.benchmark_limit bounds only the plans that
    time_sorted_plan times in that workspace, not the allocation.  So
    which engines are candidates is cuDNN's heuristics' choice, not
    PyTorch's, and no plain bound of size gives it: not a candidate,
    where N*H*W is over 4,096, of an even kernel (4x4 measured) with
    K*C of 32,768 or more, or of an odd one (3x3 measured) with K*C of
    32,768 to under 65,536 (128 -> 256 channels the one measured) and
    N*H*W of at most 16,384; a candidate of every other layer measured.
    Measured with cuDNN 9.19, fp32 NCHW, padding 1.  On the H100
    (validate/device/cudnn_find_strided_probe.sh; tests/data/record/
    cudnn_find_strided_h100.tsv, 46 layers): 3x3 128 -> 256 not at
    N*H*W of 5,120 to 16,384 (sides 8, 16, 32 and 64), a candidate at
    2,048 to 4,096 and at 16 x 16 for 96 images (24,576); 3x3 128 ->
    128, 64 -> 256, 64 -> 128 and 256 -> 256 at every size (N*H*W to
    131,072; 256 -> 256 to 16,384 at 8 x 8 and 16 x 16); 4x4 128 -> 256
    and 256 -> 512 at 16 x 16 a candidate for 8 and 16 images, not 32
    and 64.  On the H200 (tests/data/record/cudnn_find_stride2.tsv,
    cudnn_find.tsv's three, the corpus's runs): 4x4 128 -> 256 and 256
    -> 512 at 16 x 16 not for 64 images, a VQ-VAE's 256 -> 256 (4x4
    as such encoders' downsampling) at 16 x 16 not for 128, 4x4 K*C of
    32,768 or more a candidate at N*H*W of 4,096 or less (DCGAN's 256 ->
    512 at 8 x 8, 8 to 64 images; 32 to 512 -> 512), K*C up to 8,192 at
    any size (CycleGAN's 128 -> 64 at 256 x 256); 3x3: RepDistiller's
    resnet8x4 128 -> 256 at 16 x 16 not for 64 and 52 images,
    AdaHessian's WRN-16-8 a candidate (32 images: 128 -> 256 at 32 x 32,
    N*H*W 32,768, a 705,724,432-byte find; 256 -> 512 at 16 x 16, K*C
    131,072, its 2,517,696,528 bytes the H200 run's peak).
    Not modelled: CycleGAN's transposed 256 -> 128 layer at 128 x 128
    (one image), whose find had no FFT either.  Kernels of 5 to 7 were
    measured with K*C of 192 alone (candidates)."""
    kc, nhw = k * c, n * h * w
    if r % 2 == 0:
        return not (kc >= 32768 and nhw > 4096)
    return not (32768 <= kc < 65536 and 4096 < nhw <= 16384)


def fft_weight_chosen(x_shape, w_shape, stride, padding, dilation):
    """Whether cuDNN's heuristics (cudnn.benchmark off: the first plan of
    cuDNN's heuristic list that runs, get_plans_from_heuristics ->
    try_configs) give an fp32 NCHW backward-weight convolution its FFT
    engine, whose workspace is fft_weight() (the descriptor's shapes).
    Only 3x3 "same" convolutions of stride 1, a batch of 64 or more and
    sides of at most 32 get it, by channels (C in, K out) and the
    positions a channel, P = N*H*W:
      C = K = 16                 P >= 65536
      C = 16, K = 32             P > 131072
      C = K = 32                 P >= 16384
      C, K in 32..64, not both 32  16384 <= P <= 32768
      C > 64, K in 32..64        P >= 16384
    and no other.  Measured (cuDNN 9.19): the grid of validate/device/
    wgrad_fft_probe.py on an H100 (tests/data/record/conv_wgrad_fft.tsv:
    batches 16 to 256, C and K 16 to 128, sides 4 to 32, strides 1 and 2;
    55 of its 896 calls the FFT, each to the byte), and on the H200 the
    calls of Lightning's CIFAR autoencoder (ae_conv_probe.py,
    tests/data/record/conv_ae.tsv), of conv_wgrad.tsv (192 -> 64 at
    16 x 16 and 128 -> 64 at 32 x 32 with 64 images the FFT; 32 -> 32 at
    64 x 64 not) and PyHessian's ResNet-20 (16 -> 16 at 32 x 32, 100
    images); the two GPUs agree wherever both were measured.  Other
    kernels (5x5 and larger: the FFT at batches from 1, but not always;
    cuDNN's own choice), other paddings (Lightning's MNIST 32 -> 64
    unpadded 26 x 26: not the FFT) and channel counts between the grid's
    (C between 64 and 128 counts as more than 64) are not modelled
    further.  Sizes that are not plain integers (--symbolic): never."""
    dims = tuple(x_shape) + tuple(w_shape) + tuple(stride) + \
        tuple(padding) + tuple(dilation)
    if len(x_shape) != 4 or not all(type(v) is int for v in dims):
        return False
    n, c, h, w = x_shape
    k, r, s = w_shape[0], w_shape[2], w_shape[3]
    if (r, s) != (3, 3) or tuple(stride) != (1, 1) or \
            tuple(padding) != (1, 1) or tuple(dilation) != (1, 1) or \
            n < 64 or max(h, w) > 32:
        return False
    p = n * h * w
    if c == 16:
        return (k == 16 and p >= 65536) or (k == 32 and p > 131072)
    if not 32 <= k <= 64 or c < 32 or p < 16384:
        return False
    return c > 64 or c == k == 32 or p <= 32768


def conv_find_rule(plan, op, n, c, k, h, w, r, s, ph, pw, cl):
    """cudnn.benchmark's find of an fp32 2-d convolution (Dispatch.
    _find_fft says which): the larger of the chosen plan's workspace
    (PLAN) and cuDNN's FFT candidate, OP 1 backward-weight (fft_weight),
    2 backward-data (fft_data) or 3 forward (fft_forward) of stride 1,
    or 4 backward-data of stride 2 (fft_data_strided, where
    strided_fft_candidate() says it is one), of the
    descriptor's N, C, K, H x W, R x S kernel and padding PH, PW; CL 1
    (channels_last) adds, at stride 1, the transposed input, weight and
    output and 16 bytes.  Integers only (traces/symtrace.c evaluates the
    same rule for a symbolic trace's conv_find(), its arguments these,
    in this order)."""
    x, wt = (n, c, h, w), (k, c, r, s)
    if op == 4 and not strided_fft_candidate(n, c, k, h, w, r):
        return plan
    fft = (fft_weight, fft_data, fft_forward,
           fft_data_strided)[op - 1](x, wt, (ph, pw))
    if cl and op != 4:
        fft += 4 * (n * c * h * w + k * c * r * s +
                    n * k * (h + 2 * ph - r + 1) * (w + 2 * pw - s + 1)) + 16
    return max(plan, fft)


def conv_find(*args):
    """conv_find_rule(), or under --symbolic, where a size is symbolic,
    its rule's call."""
    if all(type(a) is int for a in args):
        return conv_find_rule(*args)
    return _RULE[0]("conv_find", args)


def split_k_rule(k, crs, npq, sms):
    """_split_k()'s bytes for K output channels, C*R*S weights a
    channel, N*P*Q outputs a channel and SMS multiprocessors; integers
    only (traces/symtrace.c evaluates the same rule for a symbolic
    trace's conv_split_k(), its arguments these, in this order)."""
    tiles = _pad(k, 128) // 128 * (_pad(crs, 128) // 128)
    q = int(math.sqrt(npq) / 42)
    s = min(13, 2 * sms // tiles, q)
    return s * _pad(k, 64) * crs * 4 if s >= 2 else 0


def conv(phase, x_shape, w_shape, y_shape, itemsize, stride, padding,
         dilation, transposed, groups, channels_last, weight_cl, major,
         sms=132, bf16=False, heuristic=True):
    """Events of one cuDNN convolution call; PHASE is forward, data
    (backward input) or weight (backward weight).  A transposed
    convolution is the backward-data of the convolution from its output to
    its input (cudnn_convolution_transpose runs
    raw_cudnn_convolution_backward_input_out), so its forward is that
    convolution's data phase, its grad_input the forward and its
    grad_weight the weight phase, with input and output swapped.  3-D
    convolutions (NCDHW) follow the same rule: of an H200 probe's fp16
    and bf16 forward calls (validate/device/convx_probe.py), 82 of 111
    transposed and 80 of 92 3-D within 512 bytes of it.  BF16: the half
    type is bfloat16 (a four-channel input's engines differ).
    HEURISTIC: the plan is cuDNN's heuristics' (cudnn.benchmark off),
    which may be its FFT engine (fft_weight_chosen); under
    cudnn.benchmark the find's plan, these rules' otherwise."""
    if major < 7 or groups != 1 or len(x_shape) not in (4, 5):
        return []
    # (an NCHW call: the branch below is the non-channels_last one)
    four = phase == "forward" and itemsize == 2 and not transposed and \
        len(x_shape) == 4 and int(x_shape[1]) == 4 and \
        not all(int(v) == 4 for v in tuple(w_shape[2:]) + tuple(stride))
    # a 7x7 stride-2 image stem over 1 or 3 channels: its forward
    # (_stem_forward); its weight gradient, fp32 NCHW over 3 channels to
    # at most 64 (_stem_weight)
    stem7 = not transposed and len(x_shape) == 4 and \
        int(x_shape[1]) in (1, 3) and \
        all(int(v) == 7 for v in w_shape[2:]) and \
        all(int(v) == 2 for v in stride) and \
        all(int(v) == 3 for v in padding) and \
        all(int(v) == 1 for v in dilation)
    stem = stem7 and phase == "forward"
    stemw = stem7 and phase == "weight" and itemsize == 4 and \
        not channels_last and int(x_shape[1]) == 3 and \
        int(w_shape[0]) <= 64
    # a half-precision RGB patch embedding's weight gradient
    # (_patch_weight): kernel = stride of 14 or 16, 128 or more channels
    # out
    patch = phase == "weight" and itemsize == 2 and not transposed and \
        not channels_last and len(x_shape) == 4 and \
        int(x_shape[1]) == 3 and int(w_shape[0]) >= 128 and \
        int(w_shape[2]) == int(w_shape[3]) in (14, 16) and \
        all(int(v) == int(w_shape[2]) for v in stride) and \
        all(int(v) == 0 for v in padding) and \
        all(int(v) == 1 for v in dilation)
    # Qwen2-VL's Conv3d patch embedding (_patch3d): kernel = stride, an
    # output of one position a channel
    patch3d = phase in ("forward", "weight") and itemsize in (2, 4) and \
        not transposed and not channels_last and len(x_shape) == 5 and \
        int(x_shape[1]) == 3 and \
        tuple(int(v) for v in stride) == \
        tuple(int(v) for v in w_shape[2:]) and \
        all(int(v) == 0 for v in padding) and \
        all(int(v) == 1 for v in tuple(y_shape[2:]) + tuple(dilation))
    if transposed:
        x_shape, y_shape = y_shape, x_shape
        phase = {"forward": "data", "data": "forward"}.get(phase, phase)
    x = _prod(x_shape) * itemsize
    y = _prod(y_shape) * itemsize
    w = _prod(w_shape) * itemsize
    if stemw:
        size = _stem_weight(symsize(x_shape[0]), x, w, y)
        return [("alloc", "ws", size), ("free", "ws")]
    if patch3d:
        size = _patch3d(phase, x_shape, w_shape, x, w, itemsize)
        if size is not None:
            return [("alloc", "ws", size), ("free", "ws")] if size else []
    if len(x_shape) == 5 and itemsize == 4 and phase == "data" and \
            not channels_last and int(x_shape[1]) <= 3 and \
            all(int(v) == 3 for v in w_shape[2:]) and \
            all(int(v) == 2 for v in stride) and \
            all(int(v) == 1 for v in dilation):
        # fp32 3-d backward-data into 1 to 3 channels, kernel 3, stride
        # 2 (a 3-d UNet's last transposed convolution, MONAI's): the
        # output gradient, one of 32 channels at its size, 16 bytes a
        # filter element of each output channel, 147 (an H100's probe,
        # validate/device/convx_probe.py CONVX_SET=monai: all 8 such
        # calls, N 1 to 4, K 16 to 64, 24^3 to 48^3 gradients;
        # tests/data/record/conv3d_monai.tsv)
        n, k = symsize(y_shape[0]), symsize(w_shape[0])
        size = y + 128 * n * _prod(y_shape[2:]) + 16 * k * 27 + 147
        return [("alloc", "ws", size), ("free", "ws")]
    if itemsize == 2 and not channels_last and phase != "weight":
        # fp16/bf16 NCHW: the NHWC tensor-core engines transpose the
        # weight and output with K padded to a multiple of 8 (the grid's
        # half-precision K = 4 convolutions: 20 of 23 forward and 17 of
        # 18 backward-data workspaces exact with K padded, 3 and 0
        # without)
        k = symsize(w_shape[0])
        w = w // k * _pad(k, 8)
        y = y // k * _pad(k, 8)
    if itemsize == 4 and not channels_last and len(x_shape) == 4:
        if phase == "weight" and heuristic and \
                fft_weight_chosen(x_shape, w_shape, stride, padding,
                                  dilation):
            # cuDNN's FFT engine (the descriptor's shapes)
            return [("alloc", "ws", fft_weight(x_shape, w_shape, padding)),
                    ("free", "ws")]
        if phase == "data" and int(x_shape[1]) < 8:
            # an fp32 NCHW backward-data into fewer than 8 channels (an
            # image's 3, a transposed convolution's last layer): no
            # workspace (the H200's grids, tests/data/record/conv_ws.tsv
            # and conv_fft_backward.tsv: 55 of 58 calls into 3 or 4
            # channels, every one into 3 but one; Lightning's CIFAR
            # autoencoder's 32 -> 3 transposed layer at 64 and 256
            # images, validate/device/ae_conv_probe.py)
            return []
    w32 = _prod(w_shape) * 4
    split = 0
    if channels_last:
        size = w if phase in ("forward", "weight") and not weight_cl else 0
        if phase == "weight" and itemsize == 4:
            size += x + y
    else:
        one = all(int(k) == 1 for k in w_shape[2:])
        unit = all(int(s) == 1 for s in stride) and \
            all(int(p) == 0 for p in padding) and \
            all(int(d) == 1 for d in dilation)
        if one and unit:
            # a GEMM on NCHW: none forward and backward-data; backward-
            # weight keeps one fp32 partial weight gradient a sample, N
            # of them, or where those would pass three times the input
            # and output gradient (few positions, many channels: a
            # ResNet-50's 1024 x 2048 layers over 4 x 16 x 16) the
            # transposing engine's x + y + 16 (an H100 probe of 300 1x1
            # backward-weight calls, validate/device/wgrad1x1_probe.py,
            # tests/data/record/conv_wgrad1x1_h100.tsv: 168 of 200 half-
            # and 52 of 100 fp32 calls exact, their sums -3.2% and +1.7%;
            # the H200 grid's 1x1 calls agree, conv_ws.tsv)
            size = 0
            if phase == "weight":
                n = symsize(x_shape[0])
                size = n * w32 if n * w32 <= 3 * (x + y) else x + y + 16
            if phase == "weight" and itemsize == 4 and \
                    len(x_shape) == 4 and int(x_shape[2]) == 1:
                # an fp32 1-d convolution's height-1 view
                # (Dispatch._ev_conv): the engine cuDNN picks on the
                # H200 keeps one fp32 partial weight gradient a sample,
                # N of them, up to N = 128 (validate/device/
                # conv1d_probe.py: 57 of the probe's 73 fp32 pointwise
                # calls, N 1 to 128, every one over 256 KiB; the others
                # small, none or the input); at 224 samples (Time-Series-
                # Library's PAttn, 12 positions each) another one,
                # x + y + 16.  (fp16 and bf16 take one or the other of
                # these engines by shapes the probe does not separate:
                # the 2-d rule's stays.)
                n = symsize(x_shape[0])
                size = n * w32 if n <= 128 else x + y + 16
        elif four and not one:
            # a half-precision NCHW forward over four input channels (a
            # latent diffusion model's 4-channel latents, RGBA): the
            # input and weight with their channels padded to 4 (fp16) or
            # 8 (bf16), the output and 16 bytes (validate/device/
            # patch_probe.py on an H100, 600 few-channel convolutions,
            # stems and patch embeddings, kernels 3 to 32,
            # tests/data/record/conv_few.tsv: 73 of 73 four-channel
            # ones, 4x4 of stride 4 taking none; 6 of 8 of the H200
            # grid's, conv_ws.tsv; 3 and fewer channels take padded
            # workspaces or none by shapes not separated yet)
            c = 8 if bf16 else 4
            size = x // 4 * c + w // 4 * c + y
        elif stem:
            size = _stem_forward(x_shape, w_shape, y_shape, x, w, y, itemsize,
                                 bf16)
        elif patch:
            size, split = _patch_weight(x_shape, w_shape, y_shape, x, w, y)
        elif phase == "forward" and int(x_shape[1]) < 8:
            size = 0
        elif one:
            size = x + y + (w32 if phase == "weight" else 0)
        else:
            size = x + w + y
            if phase == "weight":
                # added after the tests of size below: under --symbolic
                # a rule's call (conv_split_k), which no guard may test
                split = _split_k(w_shape, y_shape, sms)
        if size > 0 and not (one and unit):
            # cuDNN's NCHW plans ask for 16 bytes beyond the operands (of
            # the grid's calls, forward 172 at x + w + y + 16 and 50 at
            # + 147, none at x + w + y; backward-data 112 and 119): the
            # caching allocator rounds to 512 bytes, so the 16 make
            # another block size wherever the operands fill a multiple
            # of 512, as power-of-two shapes do.  (The 1x1 GEMM's
            # per-sample weight gradients take nothing more.)
            size += 16
    if size <= 0:
        return []
    # (split-K's partial sums are 0 where the operands are: no size of
    # 0 made positive by them)
    return [("alloc", "ws", size + split), ("free", "ws")]


def _patch_weight(x_shape, w_shape, y_shape, x, w, y):
    """The weight gradient's workspace of a half-precision NCHW patch
    embedding over 3 channels (kernel = stride of 14 or 16, no padding,
    K >= 128 channels out: ViT's, CLIP's and SigLIP's): (size, split).
    The engine cuDNN picks works on the input and weight with their
    channels padded to 8 (as _stem_forward's bf16) and the output
    gradient, and splits the N*P*Q reduction into 3 fp32 partial weight
    gradients (K padded to 64) and 128 bytes where N*P*Q is 3136 or more,
    1 from 65536 (2 of 2 such calls); none up to 2592 (the largest
    without measured).  On an H100 (tests/recorder_vit_patch.sh):
    patch_probe.py's grid, 26 of its 36 such calls to the byte, 33 within
    2.2 KB (the others rank engines with other split counts), and
    vit_patch_probe.py's 80, made to check the rule (N*P*Q 196 to 50176,
    14 and 16, fp16 and bf16), 70 to the byte, 77 within 2.2 KB (K of
    768 and 1024 add up to 2 KB more); x + w + y + 16 with _split_k()'s
    slices, before, 2 and 2 (tests/data/record/conv_few.tsv,
    conv_patch_h100.tsv).  SigLIP's and CLIP's 16 x 16 embedding of 32
    images, 256 channels (the thirty-sixth round's H100 snapshots): the
    rule's 36,241,552 bytes, where x + w + y + 16 was 13,238,288."""
    c = int(x_shape[1])
    size = x // c * 8 + w // c * 8 + y
    npq = symsize(y_shape[0]) * _prod(y_shape[2:])
    if npq < 3136:
        return size, 0
    s = 1 if npq >= 65536 else 3
    return size, s * _pad(symsize(w_shape[0]), 64) * 8 * _prod(w_shape[2:]) \
        * 4 + 128


def _patch3d(phase, x_shape, w_shape, x, w, itemsize):
    """cuDNN's workspace for Qwen2-VL's patch embedding: N patches of 3 x
    T x R x R under a Conv3d of that kernel and stride (an output of N x
    K x 1 x 1 x 1), or None where the 3-d rule stands.  fp32: forward,
    the input and weight and 16 bytes (17 of 17 such calls).  Half
    precision: the engines hold the input and weight with their channels
    padded to 8 and no transposed output (one position a channel is
    NDHWC too): forward, only K = 128 of two frames (8 of 8 such calls;
    none for the probe's 55 of other K or one frame); weight gradient,
    of two frames, nothing more for R = 16 (K >= 128: 14 of 14 to the
    byte) and one fp32 padded weight gradient more for R = 14, K >= 768
    from 1024 patches (12 of 12, within 8 KB).  Other shapes split the
    reduction in 4 to 32 partial gradients by rules not found: the 3-d
    rule's (conv_patch_h100.tsv's conv3d rows: vit_patch_probe.py on an
    H100; tests/recorder_vit_patch.sh)."""
    n, k = symsize(x_shape[0]), int(w_shape[0])
    t, r = int(w_shape[2]), int(w_shape[3])
    if itemsize == 4:
        return x + w + 16 if phase == "forward" else None
    pad = x // 3 * 8 + w // 3 * 8 + 16
    if phase == "forward":
        return pad if t == 2 and k == 128 else 0
    if t == 2 and r == 16 and k >= 128:
        return pad
    if t == 2 and r == 14 and k >= 768 and n >= 1024:
        return pad + w // 3 * 16
    return None


def _stem_forward(x_shape, w_shape, y_shape, x, w, y, itemsize, bf16):
    """The forward workspace, less conv's 16 bytes, of an NCHW 7x7
    stride-2 convolution of padding 3 over C = 1 or 3 channels (the image
    stem of torchvision's and timm's ResNets, DETR's and ACT's
    backbones), X, W and Y the input, weight and output bytes (W and Y of
    a half type with K padded to 8).  cuDNN's heuristics pick one of four
    engines by shapes: none; x + w + y (the operands as they are); the
    input and weight with their channels padded to 4 (fp32, fp16) or 8
    (bf16), and the output, xp + wp + y; or xp + wp alone.  The choice,
    by N, the output positions N*Ho*Wo, K and the type, as an H100's
    stems gave it (validate/device/stem_probe.py, 2400 calls, seeds 45
    and 46: N 1 to 128, H and W 64 to 512, K 32 to 768, fp32 and fp16 and
    bf16 autocast; tests/data/record/conv_stem_h100.tsv): 1748 of the
    1760 three-channel calls and 636 of the 640 one-channel ones; of the
    earlier few-channel probe's stems (conv_few.tsv) 49 of 50.  fp16
    over 1 channel takes w + y alone (the weight and output transposed)
    from N = 2; bf16 over 1 channel none."""
    c, n, k = int(x_shape[1]), symsize(x_shape[0]), int(w_shape[0])
    h, wd = symsize(x_shape[2]), symsize(x_shape[3])
    npq = symsize(_prod(y_shape[2:])) * n
    xp = x // c * (8 if bf16 else 4)
    wp = w // c * (8 if bf16 else 4)
    if itemsize == 4:
        if n > 96:
            return x + w + y if k <= 112 else xp + wp
        if k <= 56:
            # K 32 over 3 channels: mid-sized stems of up to 4 images
            return x + w + y if c == 3 and k <= 40 and n <= 4 and \
                2048 < npq <= 36864 else 0
        if k <= 80:
            return x + w + y if n >= 4 or npq > 20000 else 0
        if k <= 112:
            return xp + wp + y if c == 3 and n <= 48 and npq > 34000 \
                else 0
        if n <= 3:
            return x + w + y if npq > 23200 else 0
        return xp + wp
    if c == 1:
        if bf16:
            return 0
        return w + y if n >= 2 or npq * k > 8699904 else 0
    if bf16:
        if npq > 40192 or h > 288 or (k <= 56 and npq * k > 1114112):
            return xp + wp + y
        return 0
    if npq <= 40192:
        if wd > 309 or (k <= 56 and npq * k > 608256):
            return x + w + y
        return 0
    if k <= 40 or 56 < k <= 80:
        return xp + wp + y
    return x + w + y


def _stem_weight(n, x, w, y):
    """The backward-weight workspace of an fp32 NCHW 7x7 stride-2 stem
    (padding 3) over 3 channels to K <= 64 (torchvision's ResNets'
    conv1) of N images, X, W and Y its input, weight and output bytes.  The engine
    cuDNN's heuristics pick holds the input and weight with their
    channels padded to 4, the output gradient, S split-K partial weight
    gradients (padded to 4 channels, fp32) and 144 bytes; S follows the
    batch N: 36 up to 2 images, 54 up to 8, 58 up to 16, 120 beyond (an
    H100's stems, validate/device/stem_probe.py, tests/data/record/
    conv_stem_h100.tsv: 900 of its 1175 fp32 weight gradients, every
    K, have this form with some S; of the 367 over 3 channels to K <= 64
    the rule gives 281 to the byte, 292 within 2%, the sum +0.1%, where
    x + w + y + 16 and _split_k()'s slices gave none, the sum -7.0%;
    most misses are of one image or fewer than 5000 output positions,
    whose S varies by shapes not separated).  torchvision's ResNet-18 at
    32 images of 224 x 224, the corpus's ImageNet trainer: 134,522,000
    bytes, the H100 snapshot's own.  Wider stems take other
    slice counts (K = 384 and 768: 1 to 36): the general rule stays."""
    xp = x // 3 * 4
    wp = w // 3 * 4
    if n <= 2:
        s = 36
    elif n <= 8:
        s = 54
    elif n <= 16:
        s = 58
    else:
        s = 120
    return xp + wp + y + s * wp + 144


def geqrf_workspace_bytes(n, itemsize):
    """The device workspace cuSOLVER's geqrf asks for (geqrf_cusolver,
    cusolverDnXgeqrf_bufferSize) for a matrix of N columns: 1024
    elements for each of max(N, 256) + 512, and 128 bytes; the rows do
    not enter.  An H100 probe of torch.linalg.lstsq's looped path
    (validate/device/lstsq_probe.py; tests/data/record/lstsq_h100.tsv):
    all of its 4,130 calls, rows 1 to 8192, columns 1 to 1024, fp32 and
    fp64."""
    return itemsize * 1024 * (max(n, 256) + 512) + 128


def ormqr_workspace_bytes(m, k, nrhs, itemsize):
    """The workspace cuSOLVER's ormqr asks for (ormqr_cusolver,
    ormqr_bufferSize, lwork elements) to apply K reflectors to an M x
    NRHS matrix: M*(256 + K) + K*K + 512*NRHS + 65824 elements, and for
    NRHS over 32 its padding to 32 less 32, all rounded up to 32
    elements.  The same probe: exact for all its 3,884 calls of at
    least 8 rows and no more right-hand sides than rows; the others
    (22 of 7 rows or fewer, 202 of more right-hand sides than rows)
    are off by 32 elements to 5.3%, not modelled."""
    e = m * (256 + k) + k * k + 512 * nrhs + 65824
    if nrhs > 32:
        e += _pad(nrhs, 32) - 32
    return _pad(e, 32) * itemsize


# The memory-efficient backward kernels dispatch_cutlassB (cutlassB.h)
# offers on sm80 to sm9x, in its order: (kBlockSizeI, kBlockSizeJ, kMaxK,
# kKeysQueriesAlignedToBlockSize).  fp32 has no sequence-aligned ones;
# fp16 and bf16 the same list (the 128x64 k96 kernels only on sm86/sm89).
_EFF_F32 = ((64, 64, 32, False), (64, 64, 64, False), (128, 64, 128, False),
            (64, 64, 128, False), (128, 64, 65536, False),
            (64, 64, 65536, False))
_EFF_F32_DROPOUT = _EFF_F32
_EFF_HALF = ((64, 64, 32, True), (64, 64, 32, False), (64, 64, 64, True),
             (64, 64, 64, False), (128, 128, 128, True),
             (128, 128, 128, False), (64, 64, 128, True),
             (64, 64, 128, False), (128, 64, 65536, False),
             (64, 64, 65536, False))
_EFF_HALF_DROPOUT = ((64, 64, 32, False), (64, 64, 64, False),
                     (128, 128, 128, False), (64, 64, 128, False),
                     (128, 64, 65536, False), (64, 64, 65536, False))


def efficient_kernel(half, m, n, d, dv, dropout):
    """The kernel _efficient_attention_backward's launchKernel takes: the
    first of dispatch_cutlassB's list whose kMaxK covers max(D, Dv), with
    dropout if dropout_p != 0, and, if sequence-aligned, M % kBlockSizeI
    == N % kBlockSizeJ == 0.  (Alignment: SDPA only runs this backend
    on aligned head dimensions, and all of these kernels are aligned;
    shared memory: every kernel of the lists fits the H200's 227 KiB.)
    Returns (kBlockSizeI, kBlockSizeJ, kMaxK)."""
    if half:
        kernels = _EFF_HALF_DROPOUT if dropout else _EFF_HALF
    else:
        kernels = _EFF_F32_DROPOUT if dropout else _EFF_F32
    k = max(d, dv)
    for bi, bj, kmax, seq in kernels:
        if kmax < k:
            continue
        if seq and (m % bi != 0 or n % bj != 0):
            continue
        return bi, bj, kmax
    return None


def efficient_workspace(half, b, h, m, n, d, dv, dropout,
                        deterministic=False):
    """AttentionBackwardKernel::Params::workspace_size() of the kernel
    efficient_kernel() picks, in bytes: per batch and head
    workspace_strideBH() floats, the sum, aligned to 4, of
    - workspace_elements_gq(): kNeedsAccumGradQ (kEnableSplitKeys, every
      sm70+ kernel): ceil(M / kBlockSizeI) * ceil(D / kBlockSizeJ)
      GradQTempStorage, each a 16-byte lock, counter and pad and the
      kBlockSizeI x kBlockSizeJ fp32 accumulator tile
      (MatmulGradQ::AccumTileGmem::kElementsStored);
    - workspace_elements_gk() and _gv(): kNeedsAccumGradK/V, fp16 and
      bf16 kernels whose output is not kept in registers (kOutputInRF:
      kMaxK <= kBlockSizeI): num_splits_key * kBlockSizeJ *
      align_up(D or Dv, kBlockSizeI) each;
    num_splits_key by _efficient_attention_backward's heuristic:
    ceil(N / kBlockSizeJ), 1 when B * H >= 256 blocks already and N <=
    2 * kBlockSizeJ, at most 200 / (B * H) where gK/gV are staged, and
    at least 1; DETERMINISTIC (deterministic algorithms on, not
    warn_only), 1: _efficient_attention_backward sets p.num_splits_key =
    1 then."""
    kern = efficient_kernel(half, m, n, d, dv, dropout)
    if kern is None:
        return 0
    bi, bj, kmax = kern
    # GradQTempStorage in floats: 4 (16 bytes) + the tile; every term a
    # multiple of 4 floats, so workspace_strideBH's align_up adds none
    gq = _div_up(m, bi) * _div_up(d, bj) * (4 + bi * bj)
    gk = gv = 0
    if half and not kmax <= bi:
        splits = _div_up(n, bj)
        if b * h >= 256 and n <= 2 * bj:
            splits = 1
        # min(splits, 200 / (B * H)), counted down (no division by a
        # size: --symbolic)
        while splits > 1 and splits * b * h > 200:
            splits -= 1
        if deterministic:
            splits = 1
        gk = splits * bj * _pad(d, bi)
        gv = splits * bj * _pad(dv, bi)
    return b * h * (gq + gk + gv) * 4


def attention_backward(kind, b, h, sq, d, itemsize, sk=None, dv=None,
                       dropout=False, hkv=None, ws_shape=None,
                       deterministic=False, sms=0):
    """Events of one attention backward kernel; KIND is cudnn, efficient
    or flash; shapes of the query (B, H, Sq, D), the keys' length SK and
    heads HKV and the values' head dimension DV (default Sq, H and D),
    DROPOUT whether dropout_p != 0.  cuDNN with grouped key/value heads
    (HKV < H, enable_gqa) holds more: the keys' and values' gradients at
    the query's heads, 2 * B*H*Sk*D in the inputs' dtype, before they
    are summed over each group (the H200, 2 December 2026: B 4, H 8,
    HKV 4, S 256, D 64 bf16 asked 4227328 bytes, the same without
    grouping 2130176, whatever the layouts of q, k, v and the output's
    gradient; H = 2 HKV there, so 2 * B*HKV*Sk*D fp32 would fit as
    well).  WS_SHAPE, (batch, M, N) of the memory-efficient kernel's
    workspace where they are not the query's (a varlen call: the
    sequences, the longest query and key).  DETERMINISTIC: deterministic
    algorithms on (not warn_only); SMS the device's multiprocessors
    (flash attention's deterministic splits)."""
    sk = sq if sk is None else sk
    dv = d if dv is None else dv
    if kind == "cudnn":
        ws = b * h * sq * d * 4 + b * h * sq * 4 + 256
        if hkv is not None and hkv < h:
            ws += 2 * b * h * sk * d * itemsize
        return [("alloc", "ws", ws), ("free", "ws")]
    if kind == "flash":
        # mha_bwd: softmax_d (B, H, seqlen_q_rounded) and, not
        # deterministic, dq_accum (B, seqlen_q_rounded, H,
        # head_size_rounded) in fp32: seqlen_q rounded to 128.
        return flash_backward_rows(
            b * _pad(sq, 128), h, d,
            flash_split_splits(b, h, sms) if deterministic else 1)
    if kind != "efficient":
        return []
    wb, wm, wn = ws_shape if ws_shape is not None else (b, sq, sk)
    ws = efficient_workspace(itemsize < 4, wb, h, wm, wn, d, dv, dropout,
                             deterministic)
    end = [("alloc", "ws", ws)] if ws else []
    if itemsize < 4:
        # kKernelComputesDelta (fp16/bf16; on sm70 only kOutputInRF): delta is
        # at::empty({B, nH, M}) in fp32, freed when launchKernel returns,
        # before the workspace (declared outside it).
        ev = [("alloc", "delta", b * h * sq * 4)] + end + \
            [("free", "delta")]
        return ev + ([("free", "ws")] if ws else [])
    # fp32: delta = (grad_out.to(kFloat) * out.to(kFloat)).sum(-1)
    # .transpose(-2, -1).contiguous(): the product (B, M, H, Dv), its
    # sum (B, M, H), and the copy to (B, H, M) unless that transpose is
    # already contiguous (H or M of 1); the full expression's temporaries
    # freed in reverse order, the workspace after them, delta at
    # launchKernel's end.
    ev = [("alloc", "prod", b * sq * h * dv * 4),
          ("alloc", "sum", b * sq * h * 4)]
    if h > 1 and sq > 1:
        ev += [("alloc", "delta", b * h * sq * 4), ("free", "sum"),
               ("free", "prod")] + end + [("free", "delta")]
    else:
        ev += [("free", "prod")] + end + [("free", "sum")]
    return ev + ([("free", "ws")] if ws else [])


def flash_backward_rows(rows, h, d, splits=1):
    """Flash attention's backward temporaries over ROWS padded query rows
    (mha_bwd: batch x seqlen rounded to 128; mha_varlen_bwd: the total
    plus 128 a sequence) of H heads: softmax_d, ROWS x H floats, and
    dq_accum, ROWS x H x the head size rounded to 8 and then to 32 up to
    128, to 64 above, fp32; deterministic, SPLITS of those (at::zeros of
    {nsplits, ...}: flash_split_splits)."""
    hd = _pad(d, 8)
    hd = _pad(hd, 32 if hd <= 128 else 64)
    return [("alloc", "softmax_d", rows * h * 4),
            ("alloc", "dq_accum", splits * rows * h * hd * 4),
            ("free", "dq_accum"), ("free", "softmax_d")]


def flash_split_splits(b, h, sms):
    """nsplits of flash attention's deterministic backward (mha_bwd,
    mha_varlen_bwd with deterministic set: _flash_attention_backward sets
    it when torch.use_deterministic_algorithms(True) is on, not
    warn_only): (SMs + B*H - 1) / (B*H), B the batch (varlen: the
    sequences) and H the query's heads, each split a dq_accum of its own.
    Counted up (no division by a size: --symbolic)."""
    splits = 1
    while splits * b * h < sms:
        splits += 1
    return splits


def deterministic_strict(torch):
    """torch.use_deterministic_algorithms(True) without warn_only:
    at::globalContext().deterministicAlgorithms() and not
    deterministicAlgorithmsWarnOnly(), the attention backwards' test."""
    return torch.are_deterministic_algorithms_enabled() and \
        not torch.is_deterministic_algorithms_warn_only_enabled()


def attention_forward(kind):
    """Events of one attention forward kernel beyond its outputs."""
    if kind == "cudnn":
        return [("alloc", "ws", 256), ("free", "ws")]
    return []


def group_norm(phase, n, c, hxw, groups, acc_size, affine, grad_input):
    """Events of GroupNormKernelImplInternal (forward) and
    GroupNormBackwardKernelImplInternal (backward) beyond their outputs,
    in the accumulation type (fp32 for fp16/bf16 input): forward with a
    weight or bias and HxW > 1, the fused scale and shift a and b (N x C
    each; the 1-D path and the plain one have none); backward, ds and db
    (N x C), then for grad_input c2 and c3 (N x G) and, with a weight, c1
    (N x C, sized by its TensorIterator).  All freed when the kernel
    returns, the later ones first (the H200 snapshots' frames)."""
    nc, ng = n * c * acc_size, n * groups * acc_size
    if phase == "forward":
        if not affine or hxw == 1:
            return []
        return [("alloc", "a", nc), ("alloc", "b", nc),
                ("free", "b"), ("free", "a")]
    ev = [("alloc", "ds", nc), ("alloc", "db", nc)]
    if grad_input:
        ev += [("alloc", "c2", ng), ("alloc", "c3", ng)]
        if affine:
            ev += [("alloc", "c1", nc), ("free", "c1")]
        ev += [("free", "c3"), ("free", "c2")]
    return ev + [("free", "db"), ("free", "ds")]


def embedding_fused(numel, num_weights, dim, sms, deterministic=False):
    """Whether embedding_backward_cuda_kernel (embedding_dense_backward,
    no bags) takes its fused path: compute_grad_weight_atomic_accumulate
    adds each partial segment straight into grad_weight when
    sum_and_scatter's grid, ceil_div(max_segments * stride_warped,
    block) blocks, is under SMS * MAX_ATOMIC_ACCUM_BLOCKS_PER_SM (4) and
    max_partial_segment is over four times that grid, unless
    deterministic algorithms are asked for.  A few rows of a wide
    embedding looked up many times: enwik8's 256 bytes of width 512 in
    4 x 4096 tokens."""
    if deterministic:
        return False
    segs = min(numel, num_weights)
    warped = -(-dim // 32) * 32
    block = min(warped, 1024)
    grid = -(-(segs * warped) // block)
    return grid < sms * 4 and numel // 10 + segs > grid * 4


def embedding_backward(phase, numel, num_weights, dim, acc_size,
                       fused=False, half=False):
    """Events of embedding_dense_backward_cuda and
    _embedding_bag_dense_backward (sum/mean) beyond grad_weight, for NUMEL
    int64 indices: PHASE "sort" before grad_weight (sorted_indices and
    orig_indices, and the arange the radix sort pairs with them, freed
    after it), "segments" after it (embedding_backward_cuda_kernel:
    segment_offsets, the segment count, unique_by_key's output, two
    arrays of min(NUMEL, NUM_WEIGHTS) partial counts, the partial count,
    and for the max_partial_segment = NUMEL / 10 + min(NUMEL,
    NUM_WEIGHTS) upper bound, partial_segment_offset and
    grad_weight_per_segment, DIM values each in the accumulation type;
    all freed on return, sorted_indices and orig_indices last).  FUSED
    (embedding_fused): partial_to_segment_idx, one index a partial
    segment, instead of grad_weight_per_segment, and for a HALF
    (float16, bfloat16) gradient the float grad_weight_acc the atomics
    add into, NUM_WEIGHTS x DIM, copied into grad_weight.  cub's own
    temporary storage (some 16 bytes an index) is left out."""
    n8 = numel * 8
    if phase == "sort":
        return [("alloc", "sorted", n8), ("alloc", "orig", n8),
                ("alloc", "range", n8), ("free", "range")]
    segs = min(numel, num_weights)
    parts = numel // 10 + segs
    if fused:
        per = [("alloc", "p2s", parts * 8)]
        if half:
            per += [("alloc", "acc", num_weights * dim * 4), ("free", "acc")]
        per += [("free", "p2s")]
    else:
        per = [("alloc", "gwps", parts * dim * acc_size), ("free", "gwps")]
    return [("alloc", "offsets", n8), ("alloc", "nseg", 8),
            ("alloc", "dummy", n8), ("free", "dummy"),
            ("alloc", "pps", segs * 8), ("alloc", "ppso", segs * 8),
            ("alloc", "npart", 8), ("alloc", "pso", parts * 8)] + per + \
        [("free", "pso"), ("free", "npart"),
         ("free", "ppso"), ("free", "pps"), ("free", "nseg"),
         ("free", "offsets"), ("free", "orig"), ("free", "sorted")]


# -- reductions -----------------------------------------------------------
# gpu_reduce_kernel() allocates, through the caching allocator,
# ReduceConfig::global_memory_size() bytes and semaphore_size() bytes
# when setReduceConfig() splits the reduced
# dimension across thread blocks, and frees both when the kernel is
# launched.  What follows is setReduceConfig() for one input and one
# output, on the dimensions TensorIterator gives it (reduced dimensions
# first, each group ordered by the input's strides, adjacent dimensions
# coalesced).  Checked against the H200 snapshots' buffers: vit's bias
# gradients (6304 x 3072 and 6304 x 768, bf16: 138412032 and 38928384
# bytes) and its patch convolution's (a channels_last-strided 32 x 768 x
# 14 x 14: 38535168), moe's and the encoder-decoder's output-layer bias
# (2048 x 8000 and 1024 x 8000, fp32: 131072000 and 65536000).

# cudaDeviceProp::maxThreadsPerMultiProcessor by compute capability.
_MAX_THREADS_PER_SM = {(7, 0): 2048, (7, 5): 1024, (8, 0): 2048,
                       (8, 6): 1536, (8, 7): 1536, (8, 9): 1536,
                       (9, 0): 2048}


def max_threads_per_sm(major, minor):
    return _MAX_THREADS_PER_SM.get((major, minor),
                                   2048 if major >= 9 else 1536)


def symsize(n):
    """N, a size: an int, or under --symbolic a SymInt kept symbolic,
    so that each test of the rules on it is a guard of PyTorch's
    ShapeEnv (SymBool.__bool__; memsim_record/symbolic.py)."""
    return n if type(n) is not int and hasattr(n, "node") else int(n)


def _last_pow2(n):
    n = symsize(n)
    p = 1
    while p * 2 <= n:
        p *= 2
    return max(1, p)


def _div_up(a, b):
    return (a + b - 1) // b


def _iter_dims(shape, strides, reduce_dims):
    """TensorIterator's view of a reduction: [(size, input stride)],
    reduced dimensions first, each group by increasing stride,
    coalesced; and how many reduced dimensions there are."""
    red = sorted((strides[d], shape[d]) for d in range(len(shape))
                 if d in reduce_dims and shape[d] != 1)
    out = sorted((strides[d], shape[d]) for d in range(len(shape))
                 if d not in reduce_dims and shape[d] != 1)

    def coalesce(group):
        dims = []
        for st, sz in group:
            if dims and dims[-1][1] * dims[-1][0] == st:
                dims[-1] = (dims[-1][0] * sz, dims[-1][1])
            else:
                dims.append((sz, st))
        return dims
    r, o = coalesce(red), coalesce(out)
    return r + o, len(r)


# --symbolic: reduce()'s events by its arguments, sizes as their sympy
# expressions.  The rule's first call on an input adds its guards to the
# ShapeEnv (each test a guard, symbolic.py); a call again on the same
# expressions adds none (the guards decide every test alike) but costs
# SymNode arithmetic through sympy at each test, so its events are kept.
_REDUCE_SYM = {}


def _symkey(v):
    return ("sym", v.node.expr) if type(v) is not int and \
        hasattr(v, "node") else v


def reduce(shape, strides, reduce_dims, itemsize, acc_size, offset, major,
           minor, sms):
    """Events of one gpu_reduce_kernel call on an input of SHAPE and
    STRIDES (elements) reduced over REDUCE_DIMS; ACC_SIZE is the
    accumulator's bytes (float for fp16, bf16 and fp32)."""
    if all(type(v) is int for v in shape) and \
            all(type(v) is int for v in strides) and type(offset) is int:
        return _reduce(shape, strides, reduce_dims, itemsize, acc_size,
                       offset, major, minor, sms)
    key = (tuple(_symkey(v) for v in shape),
           tuple(_symkey(v) for v in strides), tuple(sorted(reduce_dims)),
           itemsize, acc_size, _symkey(offset), major, minor, sms)
    ev = _REDUCE_SYM.get(key)
    if ev is None:
        ev = _REDUCE_SYM[key] = _reduce(shape, strides, reduce_dims,
                                        itemsize, acc_size, offset, major,
                                        minor, sms)
    return list(ev)


def _reduce(shape, strides, reduce_dims, itemsize, acc_size, offset, major,
            minor, sms):
    numel = 1
    for s in shape:
        numel *= symsize(s)
    sym = type(numel) is not int
    # (under --symbolic the 2^31 limit is reduce_rule's: no guard)
    if numel == 0 or (not sym and numel >= 2 ** 31):
        return []
    dims, nred = _iter_dims([symsize(s) for s in shape],
                            [symsize(s) for s in strides], set(reduce_dims))
    num_outputs = 1
    for sz, _ in dims[nred:]:
        num_outputs *= sz
    inputs_per_output = numel // num_outputs
    ndim = len(dims)
    if ndim > 0:
        on_fastest = nred == ndim or dims[0][1] < dims[nred][1]
        fastest = dims[0][1] if on_fastest else dims[nred][1]
    else:
        on_fastest, fastest = True, 1
    mode = 1 if on_fastest else 0
    vec, vn = 4, 0
    if fastest == 1:
        if on_fastest and nred == 1:
            mode |= 2                        # input_vec_size
        elif not on_fastest:
            mode |= 4                        # get_output_vec_size()
            for n in [offset, dims[nred][0]] + \
                    [st for i, (_, st) in enumerate(dims) if i != nred]:
                if type(n) is not int and type(vn) is int:
                    vn = n                   # reduce_rule tests it
                    continue
                while n % vec:
                    vec //= 2
    args = (inputs_per_output, num_outputs, mode, itemsize, acc_size, vec,
            vn, sms, max_threads_per_sm(major, minor))
    if all(type(a) is int for a in args):
        r = reduce_rule(*args)
        if r is None:
            return []
        size, grid = r
        sem = 4 * grid
    else:
        # --symbolic: the rule evaluated per value where the trace is
        # instantiated (traces/symtrace.c), not guarded here: its rows
        # are there at the values where it makes a buffer
        size = _RULE[0]("reduce_buffer", args)
        sem = _RULE[0]("reduce_semaphores", args)
    # launch_reduce_kernel's DataPtrs buffer and semaphores, released in
    # the reverse order of their declaration (the gat snapshot: the 4-byte
    # semaphores go first).
    return [("alloc", "buffer", size), ("alloc", "semaphores", sem),
            ("free", "semaphores"), ("free", "buffer")]


def reduce_rule(inputs_per_output, num_outputs, mode, itemsize, acc_size,
                vec, vn, sms, threads_per_sm):
    """setReduceConfig() and its global buffer for one input and one
    output, on the reduction TensorIterator gives (_reduce): (buffer
    bytes, the grid's blocks, one 4-byte semaphore each), or None where
    it makes no buffer.  MODE: 1 the reduction is along the fastest
    dimension, 2 with input_vec_size (it is the only reduced dimension,
    stride 1), 4 with get_output_vec_size() (the kept dimension is the
    fastest, stride 1), whose vector of 4 is halved while it does not
    divide VN (or VEC from the other strides; VN 0: none).  Integers
    only: traces/symtrace.c evaluates the same rule for a symbolic
    trace's reduce_buffer() and reduce_semaphores() (their arguments
    these, in this order)."""
    numel = inputs_per_output * num_outputs
    if numel == 0 or numel >= 2 ** 31:
        return None
    on_fastest = mode & 1
    if on_fastest:
        dim0, dim1 = inputs_per_output, num_outputs
    else:
        dim0, dim1 = num_outputs, inputs_per_output
    output_vec_size = 1
    if mode & 2 and dim0 >= 128:
        dim0 //= 16 // itemsize              # input_vec_size
    elif mode & 4:
        while vn % vec:
            vec //= 2
        output_vec_size = vec
        dim0 //= vec
    max_threads = 512 // output_vec_size     # set_block_dimension()
    d0 = _last_pow2(dim0) if dim0 < max_threads else max_threads
    d1 = _last_pow2(dim1) if dim1 < max_threads else max_threads
    bw = min(d0, 32)
    bh = min(d1, max_threads // bw)
    bw = min(d0, max_threads // bh)
    step_in = step_out = 1
    block_x_reduce = on_fastest
    if block_x_reduce:
        step_in *= bw
    else:
        step_out *= bw
    vpt = _div_up(inputs_per_output, step_in)
    split_warps = vpt >= min(bh * 16, 256)
    if split_warps:
        step_in *= bh
    else:
        step_out *= bh
    vpt = _div_up(inputs_per_output, step_in)
    target = sms * (threads_per_sm // (bw * bh))
    grid = _div_up(num_outputs // output_vec_size, step_out)
    if not (split_warps and vpt >= 256 and grid <= target):
        return None
    ctas = max(min(_div_up(target, grid), _div_up(vpt, 16)),
               _div_up(vpt, 256))
    if ctas <= 1:
        return None
    size = acc_size * num_outputs * ctas
    if not block_x_reduce:
        size *= bw * output_vec_size
    return size, grid


def _reduce_buffer(*args):
    r = reduce_rule(*args)
    return r[0] if r else 0


def _reduce_semaphores(*args):
    r = reduce_rule(*args)
    return 4 * r[1] if r else 0


# --symbolic: a size that is a kernel rule's function of sizes, evaluated
# per value where the trace is instantiated instead of guarded where it is
# recorded: _RULE[0](name, args) gives it as the symbolic size
# NAME(ARGS...) (memsim_record/symbolic.py sets it; traces/symtrace.c
# evaluates RULES by the same names, with the same integers).  A row whose
# size is one of OPTIONAL is there only where it is not 0.  Such a size
# goes to Recorder.alloc as it is: nothing may test it (PyTorch's
# ShapeEnv cannot bound an unknown function, evaluate_expr raises).
# Adding a rule: the integer rule here, its call where its operands may
# be symbolic, the same rule in traces/symtrace.c's sym_rules[], and a
# figure in tests/check_symtrace.c.
RULES = {"reduce_buffer": (_reduce_buffer, 9),
         "reduce_semaphores": (_reduce_semaphores, 9),
         "conv_split_k": (split_k_rule, 4),
         "conv_find": (conv_find_rule, 12)}
OPTIONAL = ("reduce_buffer", "reduce_semaphores")
_RULE = [None]


def softmax_backward(numel, itemsize):
    """Events of softmax_backward_cuda_out (_softmax_backward_data): it
    computes `Tensor tmp = grad * output` (ITEMSIZE: their promoted
    dtype's bytes) and hands tmp to host_softmax_backward, after the
    structured kernel made grad_input; tmp is freed on return.
    log_softmax_backward_cuda_out makes none.  (The gat snapshot: one
    temporary of the attention's size between grad_input and the frees of
    grad and the saved output.)"""
    if numel == 0:
        return []
    return [("alloc", "grad*output", numel * itemsize),
            ("free", "grad*output")]


def _r256(n):
    return _pad(n, 256)


def _cub_radix_temp(n, key_bytes, value_bytes, bits):
    """cub::DeviceRadixSort's temporary storage for N keys (and values)
    sorted on BITS bits, as at::cuda::cub::radix_sort_pairs / _keys ask
    the caching allocator for it: 8-bit digits, one pass each; with more
    than one pass the alternate key and value buffers (n * key_bytes,
    n * value_bytes) and the onesweep kernel's look-back tile states, 1
    KiB (256 digits' 4-byte counts) a tile of 5376 keys (256 threads of
    21: the H200's 12 KiB for 64000 float keys, tests/recorder_generate.sh,
    and the H100's 1 KiB for 4096 long keys, tests/recorder_unique_storage.sh),
    the passes' 256-bin histograms of 8-byte counts, a 256-byte block,
    each rounded to 256 bytes, and 255 bytes of alignment slack (cub's
    AliasTemporaries)."""
    passes = max(1, -(-bits // 8))
    alt = _r256(n * key_bytes) + _r256(n * value_bytes) + \
        1024 * -(-n // 5376) if passes > 1 else 0
    return alt + _r256(passes * 256 * 8) + 256 + 255


def sort(shape, dense, dim, itemsize):
    """Temporaries of a CUDA sort (at::native::sort_cuda_kernel) of a
    tensor of SHAPE along DIM (DENSE: non-overlapping and dense, stride 1
    along DIM), after its values and indices:
    none up to 4096 keys a slice (should_use_small_sort: an in-place
    bitonic sort); a slice not dense along DIM is first copied (self_,
    values_tmp, indices_tmp); then launch_stable_sort_kernel: a single
    slice (or 10^6 keys a slice) sorts with one index array and a
    radix_sort_pairs a slice (segmented_sort_large_segments); fewer than
    128 slices sort all keys at once with (index, segment) pairs
    (segmented_sort_pairs_by_full_sort: two n * 8-byte arrays, the keys'
    output of a radix_sort_pairs on float keys and int2 values, then a
    radix_sort_keys on the segment bits); more slices take cub's
    segmented sort (its reverse indices; cub's own storage not modelled).
    Events as in kernels' docstring; the H200 (torch 2.11) showed them in
    this order for top-p sampling's sort of (4, 16000) and (8, 16000)
    fp32 logits."""
    nd = len(shape)
    if nd == 0:
        return []
    dim %= nd
    nsort = symsize(shape[dim])
    n = _prod(shape)
    if n == 0:
        return []
    if nsort <= 4096:
        # fillSliceWithIndex(indices, dim): at::arange(nsort) of the
        # indices' dtype (long), copied into every slice, freed on return
        return [("alloc", "arange", nsort * 8), ("free", "arange")]
    ev = []
    if not dense:
        ev += [("alloc", "self_", n * itemsize),
               ("alloc", "values_tmp", n * itemsize),
               ("alloc", "indices_tmp", n * 8)]
    nseg = n // nsort
    if nseg == 1 or nsort >= 1000000:
        ev.append(("alloc", "indices", nsort * 8))
        for _ in range(nseg):
            ev += [("alloc", "cub", _cub_radix_temp(nsort, itemsize, 8,
                                                    itemsize * 8)),
                   ("free", "cub")]
        ev.append(("free", "indices"))
    elif nseg < 128:
        bits = max(1, math.ceil(math.log2(nseg)))
        ev += [("alloc", "i_s", n * 8), ("alloc", "i_s2", n * 8),
               ("alloc", "keys_out", n * itemsize),
               ("alloc", "cub", _cub_radix_temp(n, itemsize, 8,
                                                itemsize * 8)),
               ("free", "cub"), ("free", "keys_out"),
               ("alloc", "cub2", _cub_radix_temp(n, 8, 0, bits)),
               ("free", "cub2"), ("free", "i_s2"), ("free", "i_s")]
    else:
        ev += [("alloc", "reverse", n * 8), ("free", "reverse")]
    if not dense:
        ev += [("free", "indices_tmp"), ("free", "values_tmp"),
               ("free", "self_")]
    return ev


def randperm(n, itemsize):
    """Temporaries of randperm_out_cuda (Randperm.cu) for a permutation of
    N values of ITEMSIZE bytes, after the result: the arange it sorts
    (N values of the result's dtype), random keys of BITS =
    min(64, ceil(log2(n - (6 n^2 + 1) / (12 log 0.9)))) bits (int32 keys
    up to 32 bits, else int64) and their sorted copy (keys_tmp), cub's
    radix_sort_pairs storage (1 byte up to 2048 keys: one tile, as
    index_put_accumulate; _cub_radix_temp beyond), freed when the sort
    returns; randperm_handle_duplicate_keys allocates nothing; then
    keys_tmp and keys as their scope ends, the arange on return."""
    if n == 0:
        return []
    nd = float(n)
    bits = min(64, int(math.ceil(math.log2(
        nd - (6 * nd * nd + 1) / (math.log(0.9) * 12)))))
    kb = 4 if bits <= 32 else 8
    cub = 1 if n <= 2048 else _cub_radix_temp(n, kb, itemsize, bits)
    return [("alloc", "range", n * itemsize), ("alloc", "keys", n * kb),
            ("alloc", "keys_tmp", n * kb), ("alloc", "cub", cub),
            ("free", "cub"), ("free", "keys_tmp"), ("free", "keys"),
            ("free", "range")]


def _cub_tiles_temp(n, tile):
    """cub's single-pass scan storage (DeviceScan, DeviceSelect): one
    16-byte tile descriptor per TILE items plus 32 of warp padding
    (ScanTileState::AllocationSize), rounded to 256 bytes, and 255 bytes
    of alignment slack (AliasTemporaries): 1023 bytes up to 16 tiles,
    as the H200 showed for every nonzero and one-dimensional cumsum of
    the MoE programs (8 to 8192 elements)."""
    tiles = max(1, -(-n // tile))
    return _r256((tiles + 32) * 16) + 255


def cumsum(numel, sizes_dim):
    """Temporaries of a CUDA cumsum/cumprod kernel (scan_dim): a tensor
    whose only non-unit dimension is the scanned one (numel ==
    size(dim)) goes to at::cuda::cub::inclusive_scan, whose
    cub::DeviceScan storage the caching allocator holds while it runs;
    others scan in PyTorch's own kernels (none)."""
    if numel == 0 or numel != sizes_dim:
        return []
    return [("alloc", "cub", _cub_tiles_temp(numel, 2048)),
            ("free", "cub")]


def _count_reduce_temp(numel, sms):
    """cub::DeviceReduce::Sum's storage for a count of NUMEL flags into
    an int (nonzero's and UniqueCub<bool>'s): a single tile, 1 byte, up
    to 4096 elements (256 threads of 16); beyond, the partials of its
    largest grid, SMS x 8 blocks x 5 (cub's subscription factor) of 4
    bytes, rounded to 256, and 255 of alignment slack (21,503 bytes on
    the H100's 132 SMs; tests/data/record/nonzero_h100.txt,
    unique_bool_h100.txt)."""
    return 1 if numel <= 4096 else _r256(sms * 8 * 5 * 4) + 255


def masked_scatter(numel, mask_copy, source_copy):
    """Temporaries of masked_scatter__cuda (the in-place op; the
    out-of-place one clones self first) over NUMEL elements of self:
    maskPrefixSum, NUMEL int64s, for the whole call; in
    launch_masked_scatter_kernel the mask's contiguous copy (MASK_COPY
    bytes: a mask broadcast by expand_inplace, as Qwen2-VL's
    get_placeholder_mask expands (B, L, 1) to the embeddings), cub's
    storage for at::cuda::cub::mask_exclusive_sum (an exclusive scan of
    the mask into int64: tiles of 896 elements, 128 threads of 7, and
    256 bytes more than _cub_tiles_temp's), freed at once, then
    source.contiguous() (SOURCE_COPY bytes) for the gather; the copies
    freed, source's first, when it returns, the prefix sums last.  As an
    H100 probe of 60 calls showed, every dtype alike (1,279 bytes of cub
    storage at 7,552 elements, 6,655 at 311,808, 1,400,831 at
    78,381,056; tests/data/record/masked_scatter_h100.tsv)."""
    if numel == 0:
        return []
    ev = [("alloc", "prefix", numel * 8)]
    if mask_copy:
        ev.append(("alloc", "mask", mask_copy))
    ev += [("alloc", "cub", _cub_tiles_temp(numel, 896) + 256),
           ("free", "cub")]
    if source_copy:
        ev += [("alloc", "source", source_copy), ("free", "source")]
    if mask_copy:
        ev.append(("free", "mask"))
    return ev + [("free", "prefix")]


def nonzero(numel, itemsize, contiguous, sms=132):
    """Events of nonzero_out_cuda around its output, as two lists: before
    it (a contiguous copy of a strided input, the count of nonzeros, an
    int, and cub::DeviceReduce::Sum's storage, freed at once) and after
    it (cub::DeviceSelect::Flagged's storage, freed, then the count and
    the copy).  The reduction's storage is _count_reduce_temp's (21,503
    bytes beyond 4096 elements on the H100's 132 SMs).  The select's
    tiles hold 8448 elements (1023 bytes up to 65,536 elements, 2815 at
    2^20, 32,767 at 2^24).  Both
    as an H100 probe of 85 calls showed, every dtype alike (bool, uint8,
    fp16, fp32, int64; 1,024 to 2^24 elements;
    tests/data/record/nonzero_h100.txt), and the H200 trace of
    Transformers' eager experts: torch.where(expert_mask[e]) over a
    permuted one-hot mask copies it (2048 longs), then 4, 1 (freed), the
    output, 1023 (freed)."""
    if numel == 0:
        return [], []
    pre = []
    if not contiguous:
        pre.append(("alloc", "self", numel * itemsize))
    pre += [("alloc", "count", 4), ("alloc", "reduce",
                                     _count_reduce_temp(numel, sms)),
            ("free", "reduce")]
    post = [("alloc", "select", _cub_tiles_temp(numel, 8448)),
            ("free", "select"), ("free", "count")]
    if not contiguous:
        post.append(("free", "self"))
    return pre, post


def unique(numel, itemsize, consecutive, inverse, counts, contiguous,
           boolean=False, sms=132):
    """Events of at::native::internal::unique_cuda_template (UniqueCub.cu,
    the CUDA _unique2, _unique and unique_consecutive without dim) for
    NUMEL elements of ITEMSIZE bytes, as four lists: before the inverse
    indices, before the output (data_out), before the counts, and after
    them (all the locals freed).  The outputs themselves are not here:
    data_out is at::empty({num_inp}) and counts resize_(num_inp) before
    both are resized to the number of distinct values, which keeps their
    storage (Dispatch._unique); the inverse is at::empty(self.sizes()).
    A non-contiguous input is copied first (expect_contiguous);
    UniqueCub: sorted = at::empty(self.sizes()) unless CONSECUTIVE, then
    cub's radix_sort_keys, or with INVERSE an arange of longs and
    sorted_indices (the arange freed after radix_sort_pairs);
    compute_unique: with INVERSE inv_loc (NUMEL ints, CONSECUTIVE) or
    inv_loc_out (NUMEL longs) and cub's inclusive sum, freed when the
    inverse is made; a long `length`, cub's DeviceSelect::Unique (or
    with COUNTS DeviceRunLengthEncode::Encode) storage, freed on return,
    then sorted_indices and sorted.  BOOLEAN, not CONSECUTIVE
    (UniqueCub<bool>): no sort; a DeviceArray<int> of the true count,
    cub's reduce storage (nonzero's, _count_reduce_temp: an H100 probe of
    28 calls, 1,024 to 2^24 elements, tests/data/record/
    unique_bool_h100.txt), output and counts of 2 each
    (Dispatch._unique), the inverse, the count freed last."""
    if numel == 0:
        return [], [], [], []
    pre = []
    if not contiguous:
        pre.append(("alloc", "self_c", numel * itemsize))
    if boolean and not consecutive:
        pre += [("alloc", "num_true", 4),
                ("alloc", "reduce", _count_reduce_temp(numel, sms)),
                ("free", "reduce")]
        post = [("free", "num_true")]
        if not contiguous:
            post.append(("free", "self_c"))
        return pre, [], [], post
    if not consecutive:
        pre.append(("alloc", "sorted", numel * itemsize))
        bits = itemsize * 8
        if inverse:
            pre += [("alloc", "range", numel * 8),
                    ("alloc", "sorted_indices", numel * 8),
                    ("alloc", "cub", _cub_radix_temp(numel, itemsize, 8,
                                                     bits)),
                    ("free", "cub"), ("free", "range")]
        else:
            pre += [("alloc", "cub", _cub_radix_temp(numel, itemsize, 0,
                                                     bits)),
                    ("free", "cub")]
    mid = []
    if inverse:
        loc = ("inv_loc", numel * 4) if consecutive else \
            ("inv_loc_out", numel * 8)
        mid = [("alloc",) + loc,
               ("alloc", "scan", _cub_tiles_temp(numel, 2048)),
               ("free", "scan"), ("free", loc[0])]
    cnt = [("alloc", "length", 8)]
    post = [("alloc", "cub", _cub_tiles_temp(numel, 2048)),
            ("free", "cub"), ("free", "length")]
    if inverse and not consecutive:
        post.append(("free", "sorted_indices"))
    if not consecutive:
        post.append(("free", "sorted"))
    if not contiguous:
        post.append(("free", "self_c"))
    return pre, mid, cnt, post


def index_put_accumulate(n, nindex, value_copy, self_copy, expand=None):
    """Temporaries of index_put_with_sort_kernel (index_put_ with
    accumulate=True on CUDA: index's backward) for N index entries over
    NINDEX index tensors: self's contiguous copy (SELF_COPY bytes, 0 if
    none); makeLinearIndex's computeLinearIndex, each index wrapped
    (wrapIndexOnce's remainder) and times its stride (n longs each, the
    wrapped one freed; later ones added into the first); the value's
    contiguous copy (VALUE_COPY bytes, 0 if none); sorted_indices,
    orig_indices and the arange the radix sort pairs them with (n longs
    each); cub's storage (1 byte up to 2048 keys, as the H200 showed for
    Transformers' grouped_mm experts' 2048 sorted choices: one tile, no
    passes; _cub_radix_temp beyond); then the locals freed in reverse.
    EXPAND: the indices makeLinearIndex makes before the linear index,
    (events before it, events after it): a mask's nonzero
    (dispatch._mask_nonzero), which expandTensors takes first, or the
    int64 copies of int32 indices; they go when makeLinearIndex
    returns, once the linear index is made."""
    if n == 0:
        return []
    ev = []
    if self_copy:
        ev.append(("alloc", "self_", self_copy))
    if expand is not None:
        ev += expand[0]
    for i in range(max(1, nindex)):
        ev += [("alloc", "wrapped%d" % i, n * 8),
               ("alloc", "linear%d" % i, n * 8), ("free", "wrapped%d" % i)]
        if i:
            ev.append(("free", "linear%d" % i))
    if expand is not None:
        ev += expand[1]
    if value_copy:
        ev.append(("alloc", "value", value_copy))
    cub = 1 if n <= 2048 else _cub_radix_temp(n, 8, 8, 64)
    ev += [("alloc", "sorted", n * 8), ("alloc", "orig", n * 8),
           ("alloc", "range", n * 8), ("alloc", "cub", cub),
           ("free", "cub"), ("free", "range"), ("free", "orig"),
           ("free", "sorted")]
    if value_copy:
        ev.append(("free", "value"))
    ev.append(("free", "linear0"))
    if self_copy:
        ev.append(("free", "self_"))
    return ev


def multinomial(shape, itemsize, n_sample, replacement, out_numel):
    """Temporaries of at::native::multinomial without replacement or for
    one sample (the exponential-race fast path, Distributions.cpp):
    the checks ((self.max() < inf) & (self.min() >= 0), then
    self.sum(-1) == 0 reduced to one bool), q = empty_like(self)
    (self / Exp(1) samples), and for several samples the values of
    topk(q); the argmax or topk writes the output.  In the order the H200
    (torch 2.11) showed for top-p sampling's (4, 16000) and (8, 16000)
    probabilities; none for sampling with replacement."""
    if replacement and n_sample > 1:
        return []
    rows = symsize(shape[0]) if len(shape) == 2 else 1
    n = _prod(shape)
    ev = [("alloc", "max", itemsize), ("alloc", "lt", 1),
          ("alloc", "min", itemsize), ("alloc", "ge", 1),
          ("alloc", "valid", 1),
          ("free", "ge"), ("free", "min"), ("free", "lt"), ("free", "max"),
          ("alloc", "sum", rows * itemsize), ("alloc", "eq", rows),
          ("alloc", "zero", 1), ("free", "eq"), ("free", "sum"),
          ("alloc", "q", n * itemsize)]
    if n_sample > 1:
        ev += [("alloc", "vals", out_numel * itemsize), ("free", "vals")]
    ev += [("free", "q"), ("free", "zero"), ("free", "valid")]
    return ev


# MultiTensorApply.cuh's kChunkSize: the elements one block of a foreach
# kernel reduces.
FOREACH_CHUNK = 65536


def foreach_reduce(op, numels, acc_size, out_size, global_norm=False):
    """Events of the foreach reductions' fast path (ForeachReduceOp.cu):
    _foreach_norm (foreach_tensor_norm_cuda, clip_grad_norm_'s
    _get_total_norm for each (device, dtype) group that
    _group_tensors_by_device_and_dtype makes) and _foreach_max
    (foreach_tensor_max_cuda), over tensors of NUMELS elements.
    OP: "norm" or "max"; ACC_SIZE: the bytes of output_per_tensor's
    dtype (norm: toOpMathType of the output dtype; max: the tensors'
    own); OUT_SIZE: the bytes of one result.

    Returns (before, tail, after), the events around the results (the
    ntensors 0-d vec_res, made in the tensors' order, the first handed
    back for the non-empty tensors): BEFORE them, output_per_tensor,
    at::zeros of ntensors * max_chunks_per_tensor (max_chunks_per_tensor
    the most kChunkSize chunks of one tensor) that the first kernel fills
    with each chunk's partial result; GLOBAL_NORM (a PyTorch whose
    _foreach_tensor_norm_cuda_impl also serves _foreach_global_norm,
    norm only) adds global_output, at::zeros({320}) of the same dtype.
    TAIL, after the non-empty tensors' results: vec_res's unused entries
    (one per empty tensor), then GLOBAL_NORM's global_norm (0-d); the
    empty tensors' results come after it (norm: at::zeros({}) each; max
    refuses empty tensors).  AFTER: vec_res's unused entries go with
    vec_res, then output_per_tensor (global_output before it), the
    locals in the reverse order of their declaration; global_norm last,
    with the pair the impl returns.
    The H200 (torch 2.11): lightning-transformer's clip_grad_norm_ over
    67 fp32 gradients of at most 16 chunks: one 4288-byte
    output_per_tensor, the 67 norms, its free."""
    n = len(numels)
    if n == 0:
        return [], [], []
    chunks = max(_div_up(symsize(k), FOREACH_CHUNK) for k in numels)
    empty = sum(1 for k in numels if symsize(k) == 0) if op == "norm" else 0
    gn = global_norm and op == "norm"
    before = []
    if n * chunks:
        before.append(("alloc", "output_per_tensor", n * chunks * acc_size))
    if gn:
        before.append(("alloc", "global_output", 320 * acc_size))
    tail = [("alloc", "vec_res %d" % i, out_size) for i in range(empty)]
    if gn:
        tail.append(("alloc", "global_norm", out_size))
    after = [("free", "vec_res %d" % i) for i in range(empty)]
    if gn:
        after.append(("free", "global_output"))
    if n * chunks:
        after.append(("free", "output_per_tensor"))
    if gn:
        after.append(("free", "global_norm"))
    return before, tail, after


def _bn_launch(c, reduction):
    """flexible_launch_configs (Normalization.cuh) with its cooperative
    flag, for C channels (the stride) and REDUCTION rows: (grid.x,
    grid.y), grid.y 1 where the reduction spans fewer than 8 row blocks
    (no grid reduction).
    MAX_BLOCK_SIZE 512, OPTIMAL_TILE_W 32, ELEMENTS_PER_THREAD 16,
    MAX_H_BLOCK 128."""
    bx = min(_last_pow2(c), 32)
    by = min(_last_pow2(_div_up(reduction, 16)), 512 // bx)
    if bx * by != 512:
        bx = min(_last_pow2(c), 512 // by)
    gx = _div_up(c, bx)
    gy = min(_div_up(reduction, by * 16), 128)
    return gx, (1 if gy < 8 else gy)


def batch_norm_forward(c, reduction, acc_size):
    """Events of a training-mode native_batch_norm on the GPU beyond its
    outputs where batch_norm_cuda (not cuDNN) takes batch_norm_mean_var's
    channels-last implementation (batch_norm_choose_impl: a contiguous
    input with stride 1 along C, such as BatchNorm1d's (N, C), or a
    channels_last one): batch_norm_stats_channels_last_cuda_template,
    after output, save_mean and save_invstd, makes for a reduction of 8
    or more row blocks staging_data (4 * C * grid.y statistics, ACC_SIZE
    bytes each: save_mean's dtype) and semaphores (at::zeros of grid.x
    ints), freed as it returns (semaphores first, its later local)."""
    gx, gy = _bn_launch(c, reduction)
    if gy <= 1:
        return []
    return [("alloc", "staging_data", 4 * c * gy * acc_size),
            ("alloc", "semaphores", gx * 4),
            ("free", "semaphores"), ("free", "staging_data")]


def batch_norm_backward(c, reduction, acc_size, w_size, mask, weight,
                        train, cl_reduce):
    """Events of native_batch_norm_backward on the GPU
    (batch_norm_backward_cuda) where it does not take the fused kernel
    (batch_norm_backward_cuda_template, which makes only its outputs):
    the caller decides that (an input batch_norm_use_channels_last_kernels
    takes, channels_last or contiguous with stride 1 along C, such as
    BatchNorm1d's (N, C); grad_input not wanted).  C channels, REDUCTION
    = numel / C, ACC_SIZE the bytes of the statistics' dtype
    (save_mean's), W_SIZE the weight's, MASK output_mask, WEIGHT whether
    there is one, TRAIN the op's train flag, CL_REDUCE whether
    batch_norm_backward_reduce_cuda takes its channels-last template.

    The events in order, ("out", I) where the op's output I (grad_input
    0, grad_weight 1, grad_bias 2) is made.  With a reduction (train or
    a weight or bias gradient wanted), batch_norm_backward_reduce_cuda:
    sum_dy and sum_dy_xmu (the statistics' dtype; the contiguous
    template makes them only for grad_input), grad_weight and grad_bias
    (the channels-last template makes both whatever the mask says: an
    unwanted one, "dropped", goes with the tuple the op returns, after
    it), then in the channels-last template, for a reduction of 8 or
    more row blocks (flexible_launch_configs with its cooperative flag),
    staging_data (2 * C * grid.y statistics) and semaphores (grid.x
    ints), freed as it returns; then grad_input; sum_dy_xmu and sum_dy
    go as batch_norm_backward_cuda returns (its locals in reverse
    order).  lightning's GAN on the H200 (torch 2.11; BatchNorm1d on
    (32, C)): sum_dy, sum_dy_xmu, grad_weight, grad_bias, grad_input,
    then the frees of sum_dy_xmu and sum_dy."""
    ev = []
    red = train or mask[1] or mask[2]
    sums = red and (cl_reduce or mask[0])
    if sums:
        ev += [("alloc", "sum_dy", c * acc_size),
               ("alloc", "sum_dy_xmu", c * acc_size)]
    dropped = []
    for i, name in ((1, "grad_weight"), (2, "grad_bias")):
        if mask[i] and red:
            ev.append(("out", i))
        elif red and cl_reduce and weight:
            dropped.append("dropped " + name)
            ev.append(("alloc", dropped[-1], c * w_size))
    if red and cl_reduce:
        gx, gy = _bn_launch(c, reduction)
        if gy > 1:
            ev += [("alloc", "staging_data", 2 * c * gy * acc_size),
                   ("alloc", "semaphores", gx * 4),
                   ("free", "semaphores"), ("free", "staging_data")]
    if mask[0]:
        ev.append(("out", 0))
    if sums:
        ev += [("free", "sum_dy_xmu"), ("free", "sum_dy")]
    return ev + [("free", d) for d in dropped]


# cuFFT's most signal dimensions in one plan (cuda/CuFFTUtils.h)
CUFFT_MAX_NDIM = 3


def fft_dims(x, dim):
    """The FFT's dims (an int list of aten's _fft_* ops), non-negative;
    None where not plain ints."""
    if dim is None:
        return None
    try:
        dims = tuple(int(d) % x.dim() for d in dim)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return dims or None


def fft_one_plan(dim):
    """use_optimized_cufft_path (cuda/SpectralOps.cpp): r2c and c2r in
    one _exec_fft where at most three dims and not starting (0, 1)."""
    return len(dim) <= CUFFT_MAX_NDIM and \
        not (len(dim) >= 2 and dim[0] == 0 and dim[1] == 1)
