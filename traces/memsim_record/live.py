"""The caching allocator beside the recording: libmemsim's live allocator
(memsim.h, memsim_live_*), served the recording's requests as the script
makes them, so that torch.cuda.memory_reserved(), max_memory_reserved(),
memory_stats(), memory_summary(), mem_get_info() and --oom's
out-of-memory errors are those of the caching allocator the recording is
replayed with (`memsim run`: the pytorch policy under the recording's
PYTORCH_CUDA_ALLOC_CONF, cuda-async under backend:cudaMallocAsync), not
the live blocks'.

The library is loaded with ctypes from $MEMSIM_LIBRARY, which `memsim
record` sets to the one it runs with.  Without it (the recorder run
alone, a library of an older memsim) those functions answer the live
blocks, as memory_allocated() does (assumption allocator-model:absent).
"""
import ctypes
import os
import threading

_lib = None


def _load():
    """The library, or None."""
    global _lib
    if _lib is not None:
        return _lib or None
    _lib = False
    path = os.environ.get("MEMSIM_LIBRARY")
    if not path:
        return None
    try:
        lib = ctypes.CDLL(path)
        lib.memsim_live_open
    except (OSError, AttributeError):
        return None
    P = ctypes.c_void_p
    lib.memsim_live_open.argtypes = [ctypes.POINTER(P), ctypes.c_char_p,
                                     ctypes.c_char_p, ctypes.c_uint64,
                                     ctypes.c_uint64, ctypes.c_double]
    lib.memsim_live_close.argtypes = [P]
    lib.memsim_live_close.restype = None
    lib.memsim_live_errmsg.argtypes = [P]
    lib.memsim_live_errmsg.restype = ctypes.c_char_p
    lib.memsim_live_request.argtypes = [P, ctypes.c_char_p, ctypes.c_uint64,
                                        ctypes.c_uint64, ctypes.c_uint64]
    lib.memsim_live_get.argtypes = [P, ctypes.c_char_p,
                                    ctypes.POINTER(ctypes.c_int64)]
    _lib = lib
    return lib


class Live:
    """One live allocator; request() and get() as memsim.h says, one
    thread at a time (a handle is for one thread at a time, and ctypes
    lets go of the GIL in the call: the autograd thread allocates too)."""

    def __init__(self, lib, handle):
        self.lib = lib
        self.h = handle
        self.refused = set()   # allocs that did not fit: no block held
        self.value = ctypes.c_int64()
        self.lock = threading.Lock()

    @classmethod
    def open(cls, conf, capacity, context, fraction):
        """The allocator of the settings CONF ({key: value}) on a device of
        CAPACITY bytes less a CONTEXT, capped by FRACTION (None: no cap);
        None where the library is absent or refuses the settings."""
        lib = _load()
        if lib is None:
            return None
        conf = dict(conf or {})
        backend = conf.pop("backend", "native")
        policy = b"cuda-async" if backend == "cudaMallocAsync" else \
            b"pytorch"
        text = ",".join("%s:%s" % kv for kv in conf.items())
        if policy == b"cuda-async":
            text = ""   # its settings are the driver's pool's
        h = ctypes.c_void_p()
        rc = lib.memsim_live_open(ctypes.byref(h), policy, text.encode(),
                                  capacity, context, fraction or 0.0)
        if rc:
            lib.memsim_live_close(h)
            return None
        return cls(lib, h)

    def request(self, action, addr=0, size=0, stream=0):
        """0, or 1 for an alloc that did not fit.  Raises RuntimeError
        with the library's message for a request it refuses."""
        with self.lock:
            if action == "free_completed" and addr in self.refused:
                self.refused.discard(addr)
                return 0
            rc = self.lib.memsim_live_request(self.h, action.encode(), addr,
                                              size, stream)
            if rc < 0:
                raise RuntimeError(
                    self.lib.memsim_live_errmsg(self.h).decode())
            if rc == 1:
                self.refused.add(addr)
            return rc

    def get(self, key):
        """A memory_stats() key's value now (0 for one it does not
        keep)."""
        with self.lock:
            if self.lib.memsim_live_get(self.h, key.encode(),
                                        ctypes.byref(self.value)):
                return 0
            return self.value.value

    def close(self):
        with self.lock:
            if self.h:
                self.lib.memsim_live_close(self.h)
                self.h = None
