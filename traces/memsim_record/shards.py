"""--world-size N: only this rank's shards are made.

FSDP and FSDP2 split every parameter (FSDP: every flat parameter and its
gradient) into N pieces with torch.chunk and keep one, the first one's
size and, where there are fewer than N pieces, empty ones
(_chunk_with_empty in FSDP2's FSDPParam._init_sharded_param and
_init_sharded_post_forward_param_metadata; FlatParamHandle.
_get_unpadded_shard and _get_reduce_scatter_tensors in FSDP).  Under the
fake mode each piece is a fake tensor, so a recording's cost grew with N
(docs/recording.md, "Data-parallel jobs").  The pieces are views: they
allocate nothing, so making only the ones FSDP reads leaves the trace as
it was.  _Chunks is torch.chunk's list of pieces, each made by
Tensor.narrow (the slice torch.chunk makes) when it is first read.

MEMSIM_COUNT_FAKES=1 prints, after the recording's summary (report()),
how many fake tensors it made (FakeTensor.__new__) and how many of them
were shard pieces made here: with only this rank's pieces, the first does
not grow with N (tests/recorder_shards.sh).  DTensor's Shard._split_tensor
(distribute_tensor) is left as it is: it pads the short pieces, which
allocates.
"""
import os

made = [0]
fakes = [None]


class _Chunks:
    """torch.chunk(t, n, dim), padded with empty tensors to n pieces
    (_chunk_with_empty: chunks[0].new_empty(0)) when PAD; a piece is made
    when indexed."""

    def __init__(self, t, n, dim, pad):
        self.t, self.n, self.pad = t, n, pad
        self.dim = dim % t.dim()
        self.size = t.size(self.dim)
        self.cs = -(-self.size // n)
        self.k = -(-self.size // self.cs)   # torch.chunk's count
        self.pieces = {}

    def __len__(self):
        return self.n if self.pad else self.k

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("chunk index out of range")
        p = self.pieces.get(i)
        if p is None:
            if i < self.k:
                start = i * self.cs
                p = self.t.narrow(self.dim, start,
                                  min(self.cs, self.size - start))
            else:
                p = self[0].new_empty(0)
            made[0] += 1
            self.pieces[i] = p
        return p

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def chunks(t, n, dim=0, pad=False):
    """torch.chunk(t, n, dim) as a _Chunks, or the list itself where the
    dimension is empty (torch.chunk's one piece) or not a plain int."""
    if t.dim() == 0 or not isinstance(n, int) or n < 1 or \
            not isinstance(t.size(dim % t.dim()), int) or t.size(dim) == 0:
        c = list(torch_chunk(t, n, dim))
        made[0] += len(c)
        while pad and len(c) < n:
            c.append(c[0].new_empty(0))
            made[0] += 1
        return c
    return _Chunks(t, n, dim, pad)


torch_chunk = None


def install(torch):
    global torch_chunk
    torch_chunk = torch.chunk
    try:
        from torch.distributed.fsdp._fully_shard import _fsdp_param, \
            _fsdp_common
    except ImportError:
        pass
    else:
        def chunk_with_empty(tensor, num_chunks, dim):
            return chunks(tensor, num_chunks, dim, pad=True)
        _fsdp_param._chunk_with_empty = chunk_with_empty
        _fsdp_common._chunk_with_empty = chunk_with_empty
    try:
        from torch.distributed.fsdp import _flat_param, _runtime_utils
        import torch.nn.functional as F
    except ImportError:
        pass
    else:
        H = _flat_param.FlatParamHandle
        truly = _flat_param._is_truly_contiguous

        def get_unpadded_shard(tensor, rank, world_size):
            # FlatParamHandle._get_unpadded_shard
            flat = torch.flatten(tensor) if truly(tensor) else \
                tensor.as_strided((tensor.numel(),), (1,))
            c = chunks(flat, world_size)
            chunk = c[0].new_empty(0) if len(c) < rank + 1 else c[rank]
            numel_to_pad = c[0].numel() - chunk.numel()
            if numel_to_pad < 0:
                raise AssertionError(
                    "Chunk's size should be at most the first chunk's size")
            return chunk, numel_to_pad

        H._get_unpadded_shard = staticmethod(get_unpadded_shard)

        def get_reduce_scatter_tensors(state, unsharded_grad):
            # _runtime_utils._get_reduce_scatter_tensors
            c = chunks(unsharded_grad, state.world_size)
            numel_to_pad = state.world_size * c[0].numel() - \
                unsharded_grad.numel()
            padded = F.pad(unsharded_grad, [0, numel_to_pad]) \
                if numel_to_pad > 0 else unsharded_grad
            return padded, torch.empty_like(c[0])

        _runtime_utils._get_reduce_scatter_tensors = \
            get_reduce_scatter_tensors
    if os.environ.get("MEMSIM_COUNT_FAKES"):
        from torch._subclasses.fake_tensor import FakeTensor
        orig_new = FakeTensor.__new__

        def new(cls, *a, **k):
            fakes[0] += 1
            return orig_new(cls, *a, **k)

        FakeTensor.__new__ = new
        fakes[0] = 0


def report(prog, f):
    """The counts, under MEMSIM_COUNT_FAKES (__main__, at the end)."""
    if fakes[0] is not None:
        print("%s: %d fake tensors made, %d shard pieces"
              % (prog, fakes[0], made[0]), file=f)
