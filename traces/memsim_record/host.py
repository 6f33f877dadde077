"""--fake: the fake boundary at the device (docs/recording-boundary.md).

The script's host code runs for real: an op whose tensors are all plain
CPU tensors and whose device arguments (if any) are the CPU runs its real
kernel with the fake mode set aside (unset_fake_temporarily), so data
loading, RNG on the CPU, numpy and control flow on CPU values are the
program's own.  Only what touches the simulated GPU goes through the fake
mode, which turns real CPU inputs into fake ones (allow_non_fake_inputs).

One exception keeps a large model built on the CPU (weights made before
`.cuda()`) from taking the host's memory: a CPU factory op (no tensor
argument: empty, zeros, randn, ..., BULK) whose output would exceed
HOST_FAKE_BYTES, called while a module is built (building_model), is
made fake, as before; what reads a value from such a tensor gets an
assumption (fake._host_values).  Made by the script's own code outside
any module's __init__ (a synthetic dataset, a buffer), it is real up to
HOST_REAL_BYTES.

Also here: the script's file writes go to a scratch folder (Files), DataLoader
workers run without the recorder, and the script's own traceback.
"""
import builtins
import copy
import errno
import functools
import io
import os
import shutil
import sys
import tempfile
import traceback

# A CPU tensor made by a factory op above this size stays fake: 1 MiB
# keeps every weight matrix of a model built on the CPU fake (a GPT-2's
# 768 x 768 fp32 projection is 2.25 MiB), so that building a 70B model
# from its config takes no host memory and no time, while the small
# tensors host code computes with (indices, offsets, schedules, masks of
# a sample, a LayerNorm's weight) are real.
HOST_FAKE_BYTES = 1 << 20
# Outside a module's construction a factory's output is real up to this
# size (the script's own data: locuslab/TCN's adding problem draws its
# 50,000 sequences with torch.rand and reads them element by element,
# each read an assumption and a fake op when they were fake: 567 s to
# record against 16 s on the H200).
HOST_REAL_BYTES = 1 << 30
# The factory ops that rule applies to: those that make storage to be
# filled (a weight's torch.empty, then its init's uniform_), not those
# whose values are the point (randperm: a sampler's order; arange,
# linspace, randint: indices and offsets), which always run for real.
BULK = frozenset(("empty", "empty_strided", "zeros", "ones", "full",
                  "randn", "rand", "normal", "empty_permuted"))


def building_model(torch, nbytes):
    """Whether a CPU factory's output of NBYTES stays fake: above
    HOST_FAKE_BYTES while a module is built (an nn.Module's __init__ on
    the stack: its weights, made before `.cuda()`, and those of its
    submodules, torch.nn.init's included), or above HOST_REAL_BYTES
    anywhere."""
    if nbytes <= HOST_FAKE_BYTES:
        return False
    if nbytes > HOST_REAL_BYTES:
        return True
    f = sys._getframe(1)
    module = torch.nn.Module
    while f is not None:
        if f.f_code.co_name == "__init__" and \
                isinstance(f.f_locals.get("self"), module):
            return True
        f = f.f_back
    return False


def own_generator(kwargs):
    """Whether a factory op draws from a torch.Generator the program
    made and passed (generator=): a weight's initialization draws from
    the default generator (torch.randn in __init__, torch.nn.init's
    functions, which fill a tensor already made), while an explicitly
    seeded generator draws numbers the program computes with while a
    module is built: e3nn's normalize2mom takes the second moment of
    its activation over 1,000,000 normal samples of
    Generator().manual_seed(0) (8 MB of float64) and reads it with
    .item() to decide whether its forward rescales (the --item-float
    default, 1.0, said not: one multiplication per activation missing).
    Such a tensor is real up to HOST_REAL_BYTES, as the script's own
    data is."""
    return kwargs.get("generator") is not None


# The most elements HostRNG draws in one recording (about 2 s of the CPU
# generator, and a scratch tensor of at most 2 GiB of fp32): past it a
# model built on the CPU is too large to draw its initialization again,
# and the host's stream goes its own way (assumption host:rng).
RNG_BUDGET = 1 << 29


class HostRNG:
    """The host's random number generators advance as in the real run.

    A weight made on the CPU stays fake (param_new in fake.py; BULK above),
    so its initialization (kaiming_uniform_, normal_, trunc_normal_,
    orthogonal_'s normal_, a large torch.randn) draws nothing from the CPU
    generator, and every later draw on the host (a sampler's order,
    GeneralizedRCNNTransform's torch_choice of a training size, a random
    crop) would differ from the real program's.  Each such op (an ATen op
    that takes a generator, on CPU tensors) runs again for real on a
    scratch tensor of the fake one's size, dtype and strides, which draws
    what the real op draws (the CPU kernels' draws depend on the size,
    dtype and layout, not on the values), and is dropped."""

    def __init__(self, torch, rec):
        self.torch = torch
        self.rec = rec
        self.drawn = 0
        self.over = False
        self.gen_ops = {}   # OpOverload -> whether it takes a generator

    def draws(self, func):
        """Whether FUNC draws from a generator: an overload of its op takes
        one (randn.default draws from the default one, randn.generator
        from the one given)."""
        v = self.gen_ops.get(func)
        if v is None:
            pk = func.overloadpacket
            v = self.gen_ops[func] = any(
                a.name == "generator"
                for o in pk.overloads()
                for a in getattr(pk, o)._schema.arguments)
        return v

    def advance(self, func, args, kwargs):
        """FUNC(*ARGS, **KWARGS), a draw made fake on the host: the same
        draw for real, its result dropped."""
        torch = self.torch
        from torch._subclasses.fake_tensor import FakeTensor, \
            unset_fake_temporarily
        g = kwargs.get("generator")
        if g is not None and getattr(g, "_memsim_cuda", False):
            return   # a CUDA generator's draw (fake.py's Generator)

        def on_host(a):
            if isinstance(a, FakeTensor):
                return a.device.type == "cpu"
            if isinstance(a, torch.Tensor):
                # not a wrapper subclass (a DTensor): its op comes here
                # again on its local tensor
                return type(a) is torch.Tensor
            if isinstance(a, (list, tuple)):
                return all(on_host(b) for b in a)
            if isinstance(a, torch.device):
                return a.type == "cpu"
            return True

        def real(a):
            if isinstance(a, FakeTensor):
                t = torch.empty_strided(a.shape, a.stride(), dtype=a.dtype,
                                        device="cpu")
                # a valid input for any draw: a probability, a mean, a
                # multinomial's weights
                t.fill_(0.5 if a.dtype.is_floating_point or
                        a.dtype.is_complex else 1)
                return t
            if isinstance(a, (list, tuple)):
                return type(a)(real(b) for b in a)
            return a

        # (a GPU draw, the common one in a training loop, leaves here)
        if not (all(on_host(a) for a in args) and
                all(on_host(v) for v in kwargs.values())):
            return
        n = _numel(args, kwargs)
        if self.over or self.drawn + n > RNG_BUDGET:
            if not self.over:
                self.over = True
                self.rec.assume("host:rng")
            return
        self.drawn += n
        # (called from the recorder's dispatch mode, which is off while
        # it runs: the fake mode under it would take the scratch tensors)
        with unset_fake_temporarily():
            func(*[real(a) for a in args],
                 **{k: real(v) for k, v in kwargs.items()})


def _numel(args, kwargs):
    """Elements a draw makes: its tensors' (an in-place draw's), else its
    size argument's (a factory's)."""
    from torch._subclasses.fake_tensor import FakeTensor
    n = sum(a.numel() for a in args if isinstance(a, FakeTensor))
    if n:
        return n
    size = kwargs.get("size")
    if size is None:
        for a in args:
            if isinstance(a, (list, tuple)) and all(
                    isinstance(d, int) for d in a):
                size = a
                break
    n = 1
    for d in size or ():
        n *= int(d)
    return n


def classifier(torch):
    """host(args, kwargs): whether an op runs on the host only: every
    tensor argument a plain (not fake) CPU tensor, every device argument
    the CPU.  A factory op (no tensor) with no device is on the CPU."""
    from torch._subclasses.fake_tensor import FakeTensor
    Tensor = torch.Tensor
    Device = torch.device

    def one(a):
        if isinstance(a, Tensor):
            return not isinstance(a, FakeTensor) and a.device.type == "cpu"
        if isinstance(a, Device):
            return a.type == "cpu"
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Tensor):
                    if isinstance(b, FakeTensor) or b.device.type != "cpu":
                        return False
                elif isinstance(b, Device) and b.type != "cpu":
                    return False
        return True

    def host(args, kwargs):
        for a in args:
            if not one(a):
                return False
        for a in kwargs.values():
            if not one(a):
                return False
        return True

    def has_tensor(args, kwargs):
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, Tensor):
                return True
            if isinstance(a, (list, tuple)) and any(
                    isinstance(b, Tensor) for b in a):
                return True
        return False

    return host, has_tensor


def nbytes(t):
    try:
        return t.numel() * t.element_size()
    except Exception:
        return 0


# -- the script's file writes -------------------------------------------------

def _abs(path):
    """PATH (str, bytes or os.PathLike) as the absolute str the scratch
    map is keyed by."""
    return os.path.abspath(os.fsdecode(os.fspath(path)))


class Files:
    """Writes to files by path (open() in a writing mode, torch.save to a
    path) go to a scratch folder; reading such a path later reads the
    scratch copy.  The user's files are never written.  The moves a
    checkpoint saver makes around such a write (timm's CheckpointSaver:
    torch.save to tmp, os.replace to last, os.link to the best, os.remove
    of old ones, os.path.exists checks) act on the scratch copies:
    os.replace, os.rename, os.link, os.remove, os.unlink, os.stat,
    os.lstat, os.chmod, os.utime and os.access of a path written during
    the recording (fsspec's transaction: a temporary file moved onto the
    target, then chmod; Lightning's checkpoints).  A move or link
    from a user's file copies it to the target's scratch copy; removing
    a user's file hides it from the recording (its path then names a
    scratch copy that does not exist) and leaves it in place, while one
    in a folder the script made during the recording (a link os.symlink
    made there: OLMo's "latest" checkpoint link) is the script's own and
    is removed for real.  Not
    covered: writes by os.open and native code (the folders the script
    made are removed at the end where empty: remove).  Listings (os.listdir,
    os.scandir, and so glob, os.walk and pathlib's iterdir and glob)
    show the folder as the real run would see it: the files the
    recording wrote there (scratch copies that exist) added, the ones it
    removed or moved away left out (listing).  shutil.rmtree and
    os.mkdir: see rmtree.  Hugging Face datasets' cache
    (HF_DATASETS_CACHE: load_dataset's Arrow files, written through
    Python but read back by pyarrow's native memory_map, and its
    filelock lock files, made by os.open) is a folder of the scratch
    folder for the recording.  It starts as a view of the user's cache
    (datasets.config's HF_DATASETS_CACHE: the variable, else HF_HOME's,
    else XDG_CACHE_HOME's or ~/.cache's huggingface/datasets): its
    folders made again, its files (not its lock files) symbolic links to
    the user's, so that load_dataset finds what the real run finds (a
    dataset loaded by name with the hub offline, or one prepared
    before); a write by open() to such a link replaces the link with
    the scratch file (a copy first for "a" and "+"), never the user's
    file.  Hugging Face's modules cache (HF_MODULES_CACHE, else HF_HOME's
    modules: evaluate.load's metric scripts, trust_remote_code's model
    code, copied there by open() and then imported, which reads the
    folder natively) and evaluate's metrics cache (HF_METRICS_CACHE,
    else HF_HOME's metrics: add_batch's Arrow files, read back by
    pyarrow) are such views too."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="memsim-record-")
        self.pid = os.getpid()
        self.map = {}
        self.count = 0
        self.orig_open = builtins.open
        self.hidden_dirs = set()   # folders shutil.rmtree hid (rmtree)
        self.made_dirs = set()     # folders os.mkdir made (rmtree)

    def path(self, file, mode):
        """Where FILE is opened with MODE: itself, or its scratch copy."""
        if isinstance(file, int) or not isinstance(file, (str, bytes,
                                                          os.PathLike)):
            return file
        try:
            p = _abs(file)
        except (TypeError, ValueError):
            return file
        if p.startswith(self.dir + os.sep):
            if any(c in mode for c in "wa+") and os.path.islink(p):
                # a link of the datasets cache's view to the user's file:
                # the write goes to a scratch file in its place
                real = os.path.realpath(p)
                getattr(self, "orig_os", os.__dict__)["unlink"](p)
                if ("a" in mode or "+" in mode) and os.path.isfile(real):
                    with self.orig_open(real, "rb") as src, \
                            self.orig_open(p, "wb") as dst:
                        shutil.copyfileobj(src, dst)
            return file
        if p.startswith("/dev/") or p.startswith("/proc/"):
            return file
        writing = any(c in mode for c in "wax+")
        if p in self.map:
            return self.map[p]
        if not writing:
            return file
        # a folder that is not there for the script: the write fails as
        # for real (open's FileNotFoundError, torch.save's "Parent
        # directory ... does not exist."), never succeeds in the scratch
        # folder.  One that rmtree or rmdir hid (or a folder in it, up to
        # one the script made since) exists on the disk: the error is
        # raised here; a missing one is passed on, to fail in the
        # caller's own way, writing nothing.
        up = os.path.dirname(p)
        while up not in self.made_dirs:
            if up in self.hidden_dirs:
                raise FileNotFoundError(errno.ENOENT, "No such file or "
                                        "directory", os.fspath(file))
            nxt = os.path.dirname(up)
            if nxt == up:
                break
            up = nxt
        if not os.path.isdir(os.path.dirname(p)):
            return file
        self.count += 1
        # the pid too: a forked DataLoader worker counts on its own
        dst = os.path.join(self.dir, "%d-%d-%s" % (
            os.getpid(), self.count, os.path.basename(p)))
        if ("a" in mode or "+" in mode) and os.path.isfile(p):
            shutil.copyfile(p, dst)
        self.map[p] = dst
        return dst

    def mapped(self, file):
        """FILE's scratch copy if the recording wrote (or hid) that path,
        else None."""
        if not self.map or not isinstance(file, (str, bytes, os.PathLike)):
            return None
        try:
            return self.map.get(_abs(file))
        except (TypeError, ValueError):
            return None

    def _move(self, orig, src, dst, keep_src, **k):
        """os.replace/rename (keep_src False) or os.link (True) from SRC to
        DST where either is a path of the recording's or SRC is a user's
        file: the scratch copies take the move, a user's file is copied
        (never moved)."""
        s = self.mapped(src)
        real = s is None
        if real:
            s = os.fspath(src)
        if real and os.path.isdir(s) and not self.made(s):
            # a user's folder: moving it would change the user's files,
            # and the recording has no view of a moved folder; refused
            raise PermissionError(
                errno.EPERM, "memsim record: moving a folder that existed "
                "before the recording would change the user's files; not "
                "done", os.fspath(src))
        if self.mapped(dst) is None and real:
            # neither path is the recording's: a move of the user's files
            # would change them; a copy into dst's scratch copy instead
            if not os.path.exists(s):
                return orig(src, dst, **k)   # the error as for real
            if os.path.isdir(s):
                # a folder the script made: moved for real, and what the
                # recording wrote into it (scratch copies) with it
                r = orig(src, dst, **k)
                self._move_prefix(s, dst)
                return r
        d = self.path(dst, "w")
        if real or keep_src:
            shutil.copyfile(s, d)
        else:
            self.orig_os["replace"](s, d)
        if not keep_src:
            # src is gone, as after the real move (a user's file is kept,
            # hidden: its path now names a scratch copy that does not exist)
            self.map[_abs(src)] = \
                s if not real else self._hidden(src)
        return None

    def _move_prefix(self, src, dst):
        """The paths under folder SRC, now DST: the scratch copies of
        the files written there and the folders made there."""
        a = _abs(src)
        b = _abs(dst)

        def moved(p):
            return b + p[len(a):] if p == a or p.startswith(a + os.sep) \
                else p

        entries = list(self.map.items())
        self.map.clear()
        self.map.update((moved(p), m) for p, m in entries)
        dirs = [moved(p) for p in self.made_dirs]
        self.made_dirs.clear()
        self.made_dirs.update(dirs)

    def made(self, path):
        """Whether PATH is the recording's: in the scratch folder, or in
        (or) a folder the script made during the recording."""
        if self.scratch(path):
            return True
        p = _abs(path)
        while True:
            if p in self.made_dirs:
                return True
            up = os.path.dirname(p)
            if up == p:
                return False
            p = up

    def rmdir(self, path, *a, **k):
        """os.rmdir: a folder of the recording's removed for real; a
        user's empty folder hidden (gone for the rest of the recording,
        left in place; os.mkdir makes it again), a user's folder with
        files in it (its own or the recording's, listing) OSError
        ENOTEMPTY, as for real."""
        orig = self.orig_os["rmdir"]
        p = _abs(path)
        if k.get("dir_fd") is None and not self.scratch(p) and \
                p not in self.hidden_dirs and self.listing(p)[0]:
            raise OSError(errno.ENOTEMPTY, "Directory not empty",
                          os.fspath(path))
        if k.get("dir_fd") is not None or self.made(p):
            r = orig(path, *a, **k)
            self.made_dirs.discard(p)
            return r
        if p in self.hidden_dirs:
            raise FileNotFoundError(errno.ENOENT, "No such file or "
                                    "directory", os.fspath(path))
        if not os.path.isdir(p):
            return orig(path, *a, **k)   # the error as for real
        if self.listdir(p):
            raise OSError(errno.ENOTEMPTY, "Directory not empty",
                          os.fspath(path))
        self.hidden_dirs.add(p)
        self.map[p] = self._hidden(p)
        return None

    def listing(self, folder):
        """How the recording changed folder FOLDER's listing: (written,
        gone), the names of the files written there (their scratch copy
        exists) and of those removed or moved away (it does not);
        FileNotFoundError where the folder itself is hidden."""
        p = _abs(folder)
        if p in self.hidden_dirs:
            raise FileNotFoundError(errno.ENOENT, "No such file or "
                                    "directory", os.fspath(folder))
        written, gone = {}, set()
        for f, m in self.map.items():
            if os.path.dirname(f) == p and f != p:
                if os.path.lexists(m):
                    written[os.path.basename(f)] = m
                else:
                    gone.add(os.path.basename(f))
        return written, gone

    def listdir(self, path="."):
        """os.listdir: the folder as the real run would list it
        (listing); a folder descriptor's as it is."""
        orig = self.orig_os["listdir"]
        if isinstance(path, int) or not self.map:
            return orig(path)
        written, gone = self.listing(path)
        names = orig(path)
        if not written and not gone:
            return names
        b = isinstance(os.fspath(path), bytes)
        out = [n for n in names if os.fsdecode(n) not in gone]
        have = {os.fsdecode(n) for n in out}
        out += [os.fsencode(n) if b else n for n in written
                if n not in have]
        return out

    def scandir(self, path="."):
        """os.scandir, as listdir: the real entries not removed, then an
        entry for each file written there (its scratch copy's kind and
        stat under the name the script gave it)."""
        orig = self.orig_os["scandir"]
        if isinstance(path, int) or not self.map:
            return orig(path)
        written, gone = self.listing(path)
        if not written and not gone:
            return orig(path)
        return _Scandir(orig(path), os.fspath(path), written, gone,
                        self.orig_os["stat"], self.orig_os["lstat"])

    def scratch(self, file):
        """Whether FILE is in the scratch folder (the datasets cache's
        view among its folders): removed for real."""
        try:
            p = _abs(file)
        except (TypeError, ValueError):
            return False
        return p.startswith(self.dir + os.sep)

    def _hidden(self, file):
        """A scratch path for FILE that nothing has written."""
        self.count += 1
        return os.path.join(self.dir, "%d-%d-removed-%s" % (
            os.getpid(), self.count, os.path.basename(os.fsdecode(
                os.fspath(file)))))

    @staticmethod
    def hf_cache(var, sub):
        """The user's Hugging Face cache folder that VAR names, else SUB of
        HF_HOME (else XDG_CACHE_HOME's or ~/.cache's huggingface), as
        datasets.config, evaluate.config and transformers.utils.hub
        compute HF_DATASETS_CACHE and HF_MODULES_CACHE."""
        env = os.environ
        home = env.get("HF_HOME") or os.path.join(
            env.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
        return os.path.abspath(os.path.expanduser(env.get(var) or
                                                  os.path.join(home, sub)))

    @staticmethod
    def cache_view(view, user):
        """VIEW, a folder made as USER, a Hugging Face cache folder, with
        symbolic links to its files, lock files left out (filelock opens
        them to write); VIEW alone where there is no such folder."""
        os.makedirs(view, exist_ok=True)
        if not os.path.isdir(user):
            return view
        for top, dirs, files in os.walk(user):
            rel = os.path.relpath(top, user)
            here = view if rel == "." else os.path.join(view, rel)
            os.makedirs(here, exist_ok=True)
            for f in files:
                if not f.endswith(".lock"):
                    os.symlink(os.path.join(top, f), os.path.join(here, f))
        return view

    def install(self):
        orig = self.orig_open
        files = self
        self.orig_os = {n: getattr(os, n) for n in (
            "replace", "rename", "link", "remove", "unlink", "stat",
            "lstat", "chmod", "utime", "access", "listdir", "scandir")}
        o = self.orig_os

        def open_(file, mode="r", *a, **k):
            return orig(files.path(file, mode), mode, *a, **k)

        def mover(name, keep_src):
            def move(src, dst, **k):
                return files._move(o[name], src, dst, keep_src, **k)
            return move

        def remover(name):
            def remove(path, **k):
                m = files.mapped(path)
                if m is not None:
                    # raises FileNotFoundError once removed, as for real
                    return o[name](m, **k)
                if files.scratch(path) or files.made(path):
                    # the recording's own: in the scratch folder, or in a
                    # folder the script made during the recording (a link
                    # os.symlink made there, a file native code wrote),
                    # removed for real as rmtree removes such a folder
                    return o[name](path, **k)
                if os.path.lexists(path):
                    # a user's file: hidden from the recording, kept
                    files.map[os.path.abspath(os.fsdecode(
                        os.fspath(path)))] = files._hidden(path)
                    return None
                return o[name](path, **k)
            return remove

        def stater(name):
            def stat(path, *a, **k):
                m = files.mapped(path)
                if m is None and name in ("chmod", "utime") and \
                        files.scratch(path) and os.path.islink(path):
                    # a link of the datasets cache's view: its own copy
                    # takes the mode and times, never the user's file
                    files.path(path, "a")
                return o[name](path if m is None else m, *a, **k)
            return stat

        self.orig_rmtree = shutil.rmtree
        o["mkdir"] = os.mkdir

        def rmtree(path, ignore_errors=False, onerror=None, *a, **k):
            return files.rmtree(path, ignore_errors, onerror, *a, **k)

        def mkdir(path, *a, **k):
            p = _abs(path)
            if p in files.hidden_dirs:
                # made again after rmtree hid it: there again, empty for
                # the recording (the user's files in it stay hidden)
                files.hidden_dirs.discard(p)
                files.map.pop(p, None)
                if os.path.isdir(p):
                    return None
            r = o["mkdir"](path, *a, **k)
            if k.get("dir_fd") is None:
                files.made_dirs.add(p)
            return r

        # Hugging Face's caches, each a view in the scratch folder
        # (HF_DATASETS_CACHE: datasets' Arrow files, read back by pyarrow
        # natively; HF_MODULES_CACHE: the scripts evaluate.load,
        # trust_remote_code and datasets copy there with open() and then
        # import, which reads the folder natively; HF_METRICS_CACHE:
        # evaluate's Arrow files of add_batch, read back at compute())
        self.orig_hf_env = {}
        for var, sub in (("HF_DATASETS_CACHE", "datasets"),
                         ("HF_MODULES_CACHE", "modules"),
                         ("HF_METRICS_CACHE", "metrics")):
            self.orig_hf_env[var] = os.environ.get(var)
            os.environ[var] = self.cache_view(
                os.path.join(self.dir, "hf-" + sub), self.hf_cache(var, sub))
        builtins.open = open_
        io.open = open_
        os.replace = mover("replace", False)
        os.rename = mover("rename", False)
        os.link = mover("link", True)
        os.remove = remover("remove")
        os.unlink = remover("unlink")
        os.stat = stater("stat")
        os.lstat = stater("lstat")
        # a written file's mode and times (fsspec's commit after its move,
        # shutil.copy2's copystat) set on its scratch copy
        os.chmod = stater("chmod")
        os.utime = stater("utime")
        os.access = stater("access")
        os.mkdir = mkdir
        os.listdir = files.listdir
        os.scandir = files.scandir
        shutil.rmtree = rmtree
        o["rmdir"] = os.rmdir
        os.rmdir = files.rmdir
        # imports of modules the script wrote (_WrittenFinder)
        self.finder = _WrittenFinder(self)
        sys.meta_path.insert(0, self.finder)

    def rmtree(self, path, ignore_errors=False, onerror=None, *a, **k):
        """shutil.rmtree of PATH (Hugging Face Trainer's checkpoint
        rotation): the scratch copies of the files the recording wrote
        under it are removed; the user's files and folders under it are
        hidden (gone for the rest of the recording, left in place), a
        folder made again by os.mkdir is there again.  A folder the
        script made during the recording (os.mkdir, os.makedirs,
        tempfile's mkdtemp) is removed for real, with what is in it.  PATH missing (or
        hidden): FileNotFoundError unless IGNORE_ERRORS, as for real; not
        a folder: shutil's own error."""
        orig = self.orig_rmtree
        if k.get("dir_fd") is not None:
            return orig(path, ignore_errors, onerror, *a, **k)
        p = _abs(path)
        if self.scratch(p):
            return orig(path, ignore_errors, onerror, *a, **k)
        stat = self.orig_os["lstat"]
        try:
            st = stat(p) if p not in self.map else stat(self.map[p])
        except FileNotFoundError:
            if ignore_errors:
                return None
            raise FileNotFoundError(2, "No such file or directory", path)
        import stat as st_mod
        if not st_mod.S_ISDIR(st.st_mode):
            return orig(path, ignore_errors, onerror, *a, **k)
        for f in [f for f in self.map if f.startswith(p + os.sep)]:
            if f not in self.hidden_dirs:
                self._gone(f)
        for top, dirs, names in os.walk(p):
            if top in self.made_dirs and top not in self.map:
                # made by the script during the recording: all in it is
                # the recording's (its writes by open() went to the
                # scratch folder), removed for real
                orig(top, ignore_errors=True)
                dirs[:] = []
                continue
            for n in names:
                self._gone(os.path.join(top, n))
            self.hidden_dirs.add(top)
            self.map[top] = self._hidden(top)
        return None

    def _gone(self, f):
        """File F removed for the recording: its scratch copy deleted, or,
        a user's file, hidden."""
        m = self.map.get(f)
        if m is None:
            self.map[f] = self._hidden(f)
        elif os.path.lexists(m) and m.startswith(self.dir + os.sep):
            self.orig_os["unlink"](m)

    def uninstall(self):
        for var, value in getattr(self, "orig_hf_env", {}).items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
        builtins.open = self.orig_open
        io.open = self.orig_open
        for n, f in getattr(self, "orig_os", {}).items():
            setattr(os, n, f)
        if hasattr(self, "orig_rmtree"):
            shutil.rmtree = self.orig_rmtree
        if getattr(self, "finder", None) in sys.meta_path:
            sys.meta_path.remove(self.finder)

    def remove(self):
        """At the recording's end: the scratch folder removed, and the
        folders the script made (os.mkdir, os.makedirs), whose files went
        to it, removed where empty, the deepest first: the user's tree
        as before the recording."""
        if os.getpid() == self.pid:  # not a child the script forked
            rmdir = getattr(self, "orig_os", {}).get("rmdir", os.rmdir)
            for d in sorted(self.made_dirs, key=len, reverse=True):
                if not self.scratch(d):
                    try:
                        rmdir(d)
                    except OSError:
                        pass      # what native code wrote there stays
            getattr(self, "orig_rmtree", shutil.rmtree)(
                self.dir, ignore_errors=True)


class _WrittenFinder:
    """A module the script wrote during the recording and then imports
    (YOLOv6's Config.fromfile: shutil.copyfile of the config file to
    _tempconfig.py in a tempfile.TemporaryDirectory put on sys.path,
    then importlib.import_module; a package written into a folder it
    made): its file is a scratch copy (Files), and Python's own path
    finder lists and reads folders natively, where the file is not.  On
    sys.meta_path before it, this finder walks the same folders in the
    same order (sys.path, or the package's __path__) and, in the first
    that has the module, leaves a file on the disk to the path finder and
    imports a written one (NAME/__init__.py, then NAME.py, as the path
    finder prefers a package) from its scratch copy, under the path the
    script gave it (__file__).  No bytecode is written for it."""

    def __init__(self, files):
        self.files = files

    def find_spec(self, fullname, path=None, target=None):
        files = self.files
        if not files.map:
            return None
        import importlib.machinery as mach
        import importlib.util
        name = fullname.rpartition(".")[2]
        ends = (os.sep + name + ".py",
                os.sep + os.path.join(name, "__init__.py"))
        if not any(f.endswith(ends) for f in files.map):
            return None          # none written: no folder walked
        for entry in (sys.path if path is None else path):
            if not isinstance(entry, str):
                continue
            try:
                d = _abs(entry or ".")
            except (TypeError, ValueError):
                continue
            base = os.path.join(d, name)
            for f, pkg in ((os.path.join(base, "__init__.py"), True),
                           (base + ".py", False)):
                m = files.map.get(f)
                if m is not None and os.path.isfile(m):
                    loader = _WrittenLoader(fullname, f, m)
                    return importlib.util.spec_from_file_location(
                        fullname, f, loader=loader,
                        submodule_search_locations=[base] if pkg else None)
            if os.path.isdir(base) or any(
                    os.path.exists(base + suf)
                    for suf in mach.all_suffixes()):
                return None      # on the disk: the path finder's
        return None


def _written_loader_class():
    import importlib.machinery as mach

    class _WrittenLoader(mach.SourceFileLoader):
        """SourceFileLoader of FILE whose source is its scratch copy."""

        def __init__(self, fullname, path, copy):
            super().__init__(fullname, path)
            self.copy = copy

        def get_data(self, path):
            if path == self.path:
                path = self.copy
            with io.FileIO(path, "r") as f:
                return f.read()

        def path_stats(self, path):
            st = os.stat(self.copy if path == self.path else path)
            return {"mtime": st.st_mtime, "size": st.st_size}

        def set_data(self, path, data, *, _mode=0o666):
            pass         # no bytecode written beside a script's file

        def _cache_bytecode(self, source_path, bytecode_path, data):
            pass

    return _WrittenLoader


_WrittenLoader = _written_loader_class()


class _Scandir:
    """What Files.scandir returns: os.scandir's iterator (a context
    manager) over the real entries less GONE, then _Entry's for the
    files WRITTEN there."""

    def __init__(self, it, path, written, gone, stat, lstat):
        self.it = it
        self.path = path
        self.written = written
        self.gone = gone
        self.stat = stat
        self.lstat = lstat
        self.seen = set()
        self.extra = None

    def __iter__(self):
        return self

    def __next__(self):
        if self.extra is None:
            for e in self.it:
                n = os.fsdecode(e.name)
                if n not in self.gone:
                    self.seen.add(n)
                    return e
            self.extra = iter([n for n in self.written
                               if n not in self.seen])
        n = next(self.extra)
        name = os.fsencode(n) if isinstance(self.path, bytes) else n
        return _Entry(name, os.path.join(self.path, name),
                      self.written[n], self.stat, self.lstat)

    def close(self):
        self.it.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Entry:
    """An os.DirEntry (name, path, is_dir, is_file, is_symlink, stat,
    inode) for a file the recording wrote: its scratch copy's."""

    def __init__(self, name, path, scratch, stat, lstat):
        self.name = name
        self.path = path
        self._scratch = scratch
        self._stat = stat
        self._lstat = lstat

    def stat(self, *, follow_symlinks=True):
        return (self._stat if follow_symlinks else self._lstat)(
            self._scratch)

    def inode(self):
        return self._lstat(self._scratch).st_ino

    def is_dir(self, *, follow_symlinks=True):
        return os.path.isdir(self._scratch)

    def is_file(self, *, follow_symlinks=True):
        return os.path.isfile(self._scratch)

    def is_symlink(self):
        return os.path.islink(self._scratch)

    def is_junction(self):
        return False

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return "<DirEntry %r>" % (self.name,)


# -- data pointers --------------------------------------------------------------
# Where the addresses of fake host storages start (patch_data_ptr): far
# above the trace's blocks (Recorder.next_addr from 1 << 32).
HOST_BASE = 0x7f0000000000


def _restore(cls, name, orig):
    """Put back CLS.NAME as the class's own __dict__ had it (ORIG; None:
    it was inherited, so the patch is deleted)."""
    if orig is None:
        delattr(cls, name)
    else:
        setattr(cls, name, orig)


def patch_data_ptr(torch, rec):
    """UntypedStorage.data_ptr of a CUDA storage of the recording is the
    address of its block in the trace (Recorder.alloc: blocks never
    overlap), and FakeTensor.data_ptr that address plus the tensor's
    storage_offset times its element size, as at::TensorBase::data_ptr
    computes it; so views and tied weights share a storage's pointer and
    distinct storages have disjoint ranges, as on the GPU.  Libraries
    tell shared tensors by them (transformers' id_tensor_storage and
    safetensors' _find_shared_tensors, on save_pretrained and
    load_model).  A fake host tensor (a model built on the CPU under
    --fake, before .to("cuda")) has a meta storage, whose data pointer
    PyTorch makes 0: such a storage gets, when a tensor of it is first
    asked for it, an address of its own in a host range far from the
    trace's (HOST_BASE on, 512-byte granules, never reused while the
    storage lives), so that tied host weights are told shared as on a
    real CPU (safetensors' load_model of a checkpoint saved without the
    tied copy: nanoVLM's from_pretrained).  Other storages (a tensor on
    device "meta") keep theirs."""
    import weakref
    from torch._subclasses.fake_tensor import FakeTensor
    S = torch.UntypedStorage
    orig_s = S.__dict__.get("data_ptr")
    orig_s_call = S.data_ptr
    orig_t = FakeTensor.__dict__.get("data_ptr")
    orig_us = FakeTensor.__dict__.get("untyped_storage")
    tensor_storage = torch.Tensor.untyped_storage
    host = {}                   # a fake host tensor's storage's _cdata -> address
    nxt = [HOST_BASE]

    def host_storage(st):
        key = st._cdata
        if key not in host:
            host[key] = nxt[0]
            nxt[0] += max((st.nbytes() + 511) // 512, 1) * 512
            weakref.finalize(st, host.pop, key, None)
        return st

    def untyped_storage(self):
        st = tensor_storage(self)
        if self.fake_device.type == "cpu":
            host_storage(st)
        return st

    def storage_ptr(self):
        ent = rec.live.get(id(self))
        if ent is not None:
            return ent[1]
        a = host.get(self._cdata)
        if a is not None:
            return a
        return orig_s_call(self)

    def tensor_ptr(self):
        if self.fake_device.type == "cuda":
            ent = rec.live.get(id(self.untyped_storage()))
            if ent is not None:
                return ent[1] + self.storage_offset() * self.element_size()
        elif self.fake_device.type == "cpu":
            st = host_storage(tensor_storage(self))
            return host[st._cdata] + self.storage_offset() * self.element_size()
        return torch.Tensor.data_ptr(self)

    S.data_ptr = storage_ptr
    FakeTensor.data_ptr = tensor_ptr
    FakeTensor.untyped_storage = untyped_storage

    def undo():
        _restore(S, "data_ptr", orig_s)
        _restore(FakeTensor, "data_ptr", orig_t)
        _restore(FakeTensor, "untyped_storage", orig_us)
    return undo


def patch_share_memory(torch, rec):
    """UntypedStorage.share_memory_ of a CUDA storage of the recording
    returns it unchanged, as PyTorch's does for every storage off the CPU
    ("only CPU uses POSIX shared memory"): Module.share_memory() of a
    model on the GPU, before torch.multiprocessing hands it to other
    processes (pytorch/examples' mnist_hogwild with --cuda).  A fake
    tensor's storage is a meta one, which share_memory_ sends to the
    CPU's shm_open path, where it raised "_share_fd_: only available on
    CPU".  Other storages, the host's, keep PyTorch's behaviour."""
    S = torch.UntypedStorage
    orig = S.__dict__.get("share_memory_")
    orig_call = S.share_memory_

    def share_memory_(self, *a, **k):
        if id(self) in rec.live:
            return self
        return orig_call(self, *a, **k)

    S.share_memory_ = share_memory_

    return lambda: _restore(S, "share_memory_", orig)


def patch_from_buffer(torch):
    """UntypedStorage.from_buffer of the script's host code makes a CPU
    storage of the bytes, as without the recorder.  PyTorch makes a meta
    storage instead while a FakeTensorMode is active
    (THPStorage_fromBuffer, for tracing), and the recorder's mode is
    active around all host code: torch.distributed's _object_to_tensor
    (all_gather_object, broadcast_object_list, gather_object: pickled
    bytes through torch.ByteStorage._from_buffer, then
    torch.ByteTensor(storage).to(device)), which torch.distributed.
    checkpoint's save runs to agree on its plan even in a world of one
    (torchtitan's checkpoint), stopped at "Attempted to set the storage of
    a tensor on device "cpu" to a storage on different device "meta"".
    The bytes are the host's: the storage is made with the fake mode set
    aside, and .to("cuda") then copies it to the GPU as the real run
    does.  Under torch.compile's tracing PyTorch's own."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    S = torch.UntypedStorage
    own = S.__dict__.get("from_buffer")
    orig = S.from_buffer
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling",
                        lambda: False)

    def from_buffer(*args, **kwargs):
        if compiling():
            return orig(*args, **kwargs)
        with unset_fake_temporarily():
            return orig(*args, **kwargs)

    S.from_buffer = staticmethod(from_buffer)

    def undo():
        if own is None:
            del S.from_buffer
        else:
            S.from_buffer = own
    return undo


def patch_trunc_normal(torch, d):
    """torch.nn.init.trunc_normal_ of a fake host weight (a model built on
    the CPU under --fake: HostRNG) draws from the CPU generator as the
    real one does.  PyTorch 2.13's _no_grad_trunc_normal_ samples by
    rejection: normal_ (or, for a narrow window, uniform_) into the
    tensor, then, while `mask.any()` (`pending.any()`) finds a value
    outside [a, b], another full draw (empty_like(...).normal_) and a
    torch.where.  HostRNG replays each draw of a fake tensor on a scratch
    one, but the loop's `.any()` read the fake values, which the rules
    answer False (an item:bool assumption each): one draw where the real
    run makes as many as its values need, so every later host draw (a
    DataLoader's shuffle seed, a random crop) went its own way.  A cut at
    a few standard deviations draws again for any large weight
    (torchtitan's and OLMo's trunc_normal_(std=s, a=-3 s, b=3 s): 0.27% of
    the values outside).  Transformers 5's variance_scaling_ (SigLIP,
    PaliGemma, BLIP-2: the r36c kit, 16 to 29 such assumptions a program)
    cuts at +-2 with std 1/sqrt(fan_in)/0.88, where False is right but
    was still an assumption.  Here the whole function runs for real, with
    the recorder's modes set aside, on a scratch CPU tensor of the fake
    one's size, dtype and strides, which draws what the real call draws
    (the loop's iterations included), and is dropped; the fake tensor is
    returned, as the original returns its argument.  Within HostRNG's
    budget (past it, host:rng as there); under --values cpu the tensor is
    real and the function PyTorch's."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils._python_dispatch import _disable_current_modes
    init = torch.nn.init
    orig = init.__dict__.get("_no_grad_trunc_normal_")
    if orig is None:
        return lambda: None
    rng = d.host_rng
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling",
                        lambda: False)

    def _no_grad_trunc_normal_(tensor, *args, **kwargs):
        if d.values_cpu or compiling() or \
                not isinstance(tensor, FakeTensor) or \
                tensor.device.type != "cpu":
            return orig(tensor, *args, **kwargs)
        g = kwargs.get("generator")
        if g is None and len(args) > 4:
            g = args[4]
        if g is not None and getattr(g, "_memsim_cuda", False):
            return tensor
        n = tensor.numel()
        if rng.over or rng.drawn + n > RNG_BUDGET:
            if not rng.over:
                rng.over = True
                rng.rec.assume("host:rng")
            return tensor
        rng.drawn += n
        with _disable_current_modes():
            scratch = torch.empty_strided(tuple(tensor.shape),
                                          tuple(tensor.stride()),
                                          dtype=tensor.dtype, device="cpu")
            orig(scratch, *args, **kwargs)
        return tensor

    init._no_grad_trunc_normal_ = _no_grad_trunc_normal_

    def undo():
        init._no_grad_trunc_normal_ = orig
    return undo


def patch_process_send(torch):
    """A fake tensor pickled for another process (torch.multiprocessing:
    a Process's arguments under spawn, a Queue) stops the recording with
    one clear error.  On the GPU, reduce_tensor sends a CUDA tensor as a
    CUDA IPC handle and the other process maps the block and allocates
    its own work from its own caching allocator; the recording is of one
    process and cannot give the other one its tensors.  (Before, pickle
    reached the fake tensor's FakeTensorMode: "Can't pickle local
    object".)"""
    from multiprocessing.reduction import ForkingPickler
    from torch._subclasses.fake_tensor import FakeTensor
    import torch.multiprocessing.reductions  # noqa: F401 (registers them)

    def refuse(t):
        raise RuntimeError(
            "memsim record: a %s tensor is sent to another process "
            "(torch.multiprocessing): the recording is of one process, "
            "and cannot follow the tensor there" % t.device.type)

    table = ForkingPickler._extra_reducers
    saved = dict(table)
    for cls, red in saved.items():
        if isinstance(cls, type) and issubclass(cls, torch.Tensor):
            def reduce(t, _red=red):
                if isinstance(t, FakeTensor):
                    refuse(t)
                return _red(t)
            table[cls] = reduce
    table[FakeTensor] = refuse

    def undo():
        table.clear()
        table.update(saved)
    return undo


# -- OpenCV --------------------------------------------------------------------
def patch_cv2(cv2, files):
    """OpenCV reads and writes image files in native code
    (cv::imread, cv::imwrite, cv::imreadmulti in
    modules/imgcodecs/src/loadsave.cpp open the path themselves), past
    Files' open(): cv2.imwrite writes to the path's scratch copy, and
    cv2.imread (imreadmulti, haveImageReader) of a path the recording
    wrote reads that copy.  ultralytics/yolov5's training saves
    results.png with matplotlib (through open()) and reads it back with
    cv2.imread for TensorBoard; it read the user's path, found nothing
    and got None.  A read of a path the recording hid (removed) reads
    its scratch path, which does not exist: None, as for real."""
    names = ("imread", "imreadmulti", "haveImageReader", "imwrite")
    orig = {n: getattr(cv2, n) for n in names if hasattr(cv2, n)}

    def reader(o):
        def read(filename, *a, **k):
            m = files.mapped(filename)
            return o(filename if m is None else m, *a, **k)
        return read

    def writer(o):
        def write(filename, *a, **k):
            return o(files.path(filename, "wb"), *a, **k)
        return write

    for n, o in orig.items():
        setattr(cv2, n, writer(o) if n == "imwrite" else reader(o))

    def undo():
        for n, o in orig.items():
            setattr(cv2, n, o)
    return undo


# -- safetensors ----------------------------------------------------------------
def patch_jit_save(torch, files):
    """ScriptModule.save (torch.jit.save's, for a path) of a module with
    fake tensors (torch.jit.trace of a CUDA model, then .save: yolov7's
    detect.py TracedModel writes traced_model.pt).  PyTorch's writer
    (torch::jit::ExportModule, export_module.cpp: writeArchive's
    getWriteableTensorData) copies each tensor's storage to the host
    to write it: nothing on the GPU, so the recording has no event for
    it.  Native code cannot write a fake (meta) storage, so the scratch
    copy of the path (Files) gets a placeholder, not a TorchScript
    archive: a torch.jit.load of it during the recording fails.  A
    module without fake tensors is saved as before, to the scratch
    copy."""
    from torch._subclasses.fake_tensor import FakeTensor
    import torch.jit._script as js
    # RecursiveScriptModule's save, and ScriptModule's copy of it (the
    # one torch.jit.trace's TopLevelTracedModule finds)
    classes = [c for c in (getattr(js, "RecursiveScriptModule", None),
                           getattr(js, "ScriptModule", None))
               if c is not None and "save" in c.__dict__]
    if not classes:
        return lambda: None
    origs = [(c, c.__dict__["save"]) for c in classes]
    orig = origs[0][1]

    def save(self, f, **kwargs):
        path = files.path(f, "wb")
        try:
            ts = list(self.parameters()) + list(self.buffers())
        except Exception:
            ts = []
        if not any(isinstance(t, FakeTensor) for t in ts):
            return orig(self, path, **kwargs)
        with files.orig_open(os.fsdecode(os.fspath(path)), "wb") as out:
            out.write(b"memsim record: a TorchScript module of fake "
                      b"tensors, not written\n")
    for c, _ in origs:
        c.save = save

    def undo():
        for c, o in origs:
            c.save = o
    return undo


def patch_safetensors(files):
    """safetensors writes and reads its files in native code, past Files'
    open(): save_file writes to the path's scratch copy, and safe_open
    (load_file's, and transformers' from_pretrained's) reads a path the
    recording wrote from its scratch copy.  A state_dict with fake
    tensors is written as safetensors' format lays it out (an 8-byte
    header length, the JSON header padded with spaces to 8 bytes, the
    tensors' bytes at their data_offsets): the real tensors' bytes, zeros
    for a fake tensor's (which has no values), after the same checks as
    safetensors' own (_evaluate_tensors_for_save: shared storages, told
    by their data pointers; contiguity).  Nothing when safetensors is
    not installed."""
    try:
        import safetensors
        import safetensors.torch as st
    except ImportError:
        return lambda: None
    import json
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    names = {v: k for k, v in getattr(st, "_TYPES", {}).items()}
    orig = {"save_file": st.save_file, "st_open": st.safe_open,
            "open": safetensors.safe_open}

    def write(tensors, path, metadata):
        check = getattr(st, "_evaluate_tensors_for_save", None)
        if check is not None:
            check(tensors)
        header, off, real = {}, 0, []
        if metadata:
            header["__metadata__"] = metadata
        # the largest element size first, then by name, as safetensors
        # lays tensors out: each starts aligned to its element size
        for k in sorted(tensors, key=lambda k: (
                -tensors[k].element_size(), k)):
            v = tensors[k]
            if not v.is_contiguous():
                raise ValueError("You are trying to save a non contiguous "
                                 "tensor: `%s` which is not allowed." % k)
            n = v.numel() * v.element_size()
            header[k] = {"dtype": names[v.dtype], "shape": list(v.shape),
                         "data_offsets": [off, off + n]}
            if not isinstance(v, FakeTensor) and n:
                real.append((off, v))
            off += n
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        with files.orig_open(path, "wb") as f:
            f.write(len(h).to_bytes(8, "little"))
            f.write(h)
            for o, v in real:
                f.seek(8 + len(h) + o)
                f.write(v.detach().cpu().reshape(-1).view(torch.uint8)
                        .numpy().tobytes())
            f.truncate(8 + len(h) + off)   # zeros (a sparse file)

    def save_file(tensors, filename, metadata=None):
        path = files.path(filename, "wb")
        if isinstance(tensors, dict) and any(
                isinstance(v, FakeTensor) for v in tensors.values()) and \
                all(v.dtype in names for v in tensors.values()):
            return write(tensors, path, metadata)
        return orig["save_file"](tensors, path, metadata=metadata)

    def opener(o):
        def safe_open(filename, *a, **k):
            m = files.mapped(filename)
            return o(filename if m is None else m, *a, **k)
        return safe_open

    st.save_file = save_file
    st.safe_open = opener(orig["st_open"])
    safetensors.safe_open = opener(orig["open"])

    def undo():
        st.save_file = orig["save_file"]
        st.safe_open = orig["st_open"]
        safetensors.safe_open = orig["open"]
    return undo


# -- DataLoader workers -------------------------------------------------------
_WORKER_LOOP = []


def _worker_loop(*a, **k):
    """torch's _worker_loop with the recorder's modes popped.  A module
    function, so that a worker started by spawn or forkserver (the
    script's set_start_method, or its DataLoader's multiprocessing_context)
    gets it by name: that child imports this module afresh, with no modes
    to pop and torch's own loop."""
    from torch.utils.data._utils import worker as w
    from torch.utils._python_dispatch import _disable_current_modes
    orig = _WORKER_LOOP[0] if _WORKER_LOOP else w._worker_loop
    with _disable_current_modes():
        return orig(*a, **k)


def patch_workers(torch):
    """A DataLoader worker (a forked process) runs the dataset with the
    recorder's modes popped: its tensors are all real, as in a real run;
    the batches it sends back are real CPU tensors."""
    from torch.utils.data._utils import worker as w
    orig = w._worker_loop
    _WORKER_LOOP[:] = [orig]
    w._worker_loop = _worker_loop

    def undo():
        w._worker_loop = orig
        del _WORKER_LOOP[:]
    return undo


# -- the script's traceback ---------------------------------------------------
def user_traceback(exc, script):
    """The traceback of EXC with the recorder's frames left out: the
    frames of the script and of the libraries it calls, as Python shows
    them, then the innermost few; memsim_record's own never."""
    here = os.path.dirname(os.path.abspath(__file__))
    tb = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in tb
              if not os.path.abspath(f.filename).startswith(here + os.sep)
              and not f.filename.startswith("<frozen runpy")
              and "/runpy.py" not in f.filename]
    user = [i for i, f in enumerate(frames)
            if "site-packages" not in f.filename and
            "/lib/python" not in f.filename]
    if len(frames) > 12:
        keep = set(user[-8:]) | set(range(len(frames) - 4, len(frames)))
        shown, last = [], -1
        for i in sorted(keep):
            if last >= 0 and i != last + 1:
                shown.append(None)
            shown.append(frames[i])
            last = i
    else:
        shown = frames
    out = ["Traceback (most recent call last):\n"]
    for f in shown:
        if f is None:
            out.append("  ...\n")
            continue
        out.extend(traceback.format_list([f]))
    if tb and os.path.abspath(tb[-1].filename).startswith(here + os.sep) \
            and not (isinstance(exc, OSError) and
                     os.path.basename(tb[-1].filename) == "host.py") \
            and os.path.basename(tb[-1].filename) != "samedevice.py":
        # raised by the recorder itself (a refusal, or a fault to report);
        # not the operating system's error that the file boundary's
        # wrappers (open, os's moves, removes and stats) pass on, which
        # the program meets without the recorder too (a file opened in a
        # folder that does not exist), nor a CUDA kernel's device check
        # (samedevice.check), which the program meets on the GPU
        out.append("  (raised inside memsim record, %s:%d)\n" % (
            os.path.basename(tb[-1].filename), tb[-1].lineno))
    out.extend(traceback.format_exception_only(type(exc), exc))
    return "".join(out)


# -- torch.save and torch.load ------------------------------------------------
_LOAD_MAP = [None]


_LOADING = [None]    # the _Load under way


def _map_device(torch, m, storage, location):
    """Where map_location M puts STORAGE, saved at LOCATION
    (torch.serialization's restore_location), as a torch.device; a
    callable is asked with the host storage, its .cuda() / .to(device)
    answered by the device alone, and what it returns is where the
    storage goes (None: where it was saved)."""
    if m is None:
        return torch.device(location)
    if isinstance(m, dict):
        return torch.device(m.get(location, location))
    if isinstance(m, (str, torch.device)):
        return torch.device(m)
    U = torch.UntypedStorage
    asked = []
    orig_cuda, orig_to = U.cuda, U.to

    def cuda(self, device=None, non_blocking=False):
        asked.append(torch.device("cuda", device) if device is not None
                     else torch.device("cuda"))
        return self

    def to(self, *a, device=None, non_blocking=False):
        d = torch.device(device if device is not None else a[0])
        if d.type == "cpu":
            return orig_to(self, device=d, non_blocking=non_blocking)
        asked.append(d)
        return self
    U.cuda, U.to = cuda, to
    try:
        r = m(storage, location)
    finally:
        U.cuda, U.to = orig_cuda, orig_to
    if r is None:
        return torch.device(location)
    if asked:
        return asked[-1]
    return r.device


def _rebuild_fake(shape, stride, dtype, device, requires_grad,
                  values=None):
    """A tensor torch.save wrote under the recorder, loaded again during
    the same recording: a tensor of its shape, dtype and strides, on DEVICE
    or where torch.load's map_location puts it (a CUDA tensor is a fake
    one, allocated as torch.load allocates it), with VALUES (the bytes
    of a contiguous host tensor of its shape: what the recorder knew of
    it when it was saved, patch_save; bytes, not a tensor, which
    torch.load would put where map_location says) or zeros.  A callable
    map_location is asked as torch.load asks it, with a host storage:
    Lightning's TorchCheckpointIO passes lambda storage, loc: storage,
    which keeps every tensor of a checkpoint on the host (its
    load_state_dict then copies them into the GPU's parameters)."""
    import torch
    loc = _LOAD_MAP[0]
    if loc is not None:
        from torch._subclasses.fake_tensor import unset_fake_temporarily
        with unset_fake_temporarily():
            device = str(_map_device(torch, loc, torch.UntypedStorage(0),
                                     device))
    ld = _LOADING[0]
    with (ld.fake() if ld is not None else _nothing()):
        t = torch.empty_strided(shape, stride, dtype=dtype,
                                device=device).zero_()
    if values is not None:
        from torch._subclasses.fake_tensor import FakeTensor, \
            unset_fake_temporarily
        with unset_fake_temporarily():
            values = torch.frombuffer(bytearray(values), dtype=torch.uint8) \
                .view(dtype).reshape(shape)
        if isinstance(t, FakeTensor):
            from . import values as _values
            rec = _SAVE_REC[0]
            if rec is not None:
                _values.loaded(rec, t, values)
        else:
            with torch.no_grad():
                t.copy_(values)
    if requires_grad:
        t.requires_grad_(True)
    return t


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class _Load:
    """One torch.load of a real file, run for real on the host (the fake
    mode set aside, so that its CPU tensors are the file's own), with a
    map_location of its own: each storage that the program's map_location
    (a device, a string, a dict, a callable, or none: where it was saved)
    puts on a GPU is made there as torch.load makes it -- one storage of
    its nbytes a storage (load_tensor, then restore_location's
    UntypedStorage(nbytes, device) and copy), in the order the pickle
    first names them -- as a fake CUDA storage, allocated under the
    recording; each tensor on it (_rebuild_tensor) is a fake view of it
    with the file's values (values.loaded)."""

    def __init__(self, torch, rec, map_location):
        from torch._subclasses.fake_tensor import FakeTensorMode
        self.torch = torch
        self.rec = rec
        self.map = map_location
        key = torch._C._TorchDispatchModeKey.FAKE
        self.mode = torch._C._get_dispatch_mode(key)
        self.key = key
        self.Fake = FakeTensorMode
        self.gpu = {}       # id(host storage) -> (host storage, fake base)

    def fake(self):
        """The recording's fake mode again, inside the host load."""
        torch, mode, key = self.torch, self.mode, self.key

        class Again:
            def __enter__(s):
                torch._C._set_dispatch_mode(mode)

            def __exit__(s, *a):
                torch._C._unset_dispatch_mode(key)
                return False
        return Again()

    def device(self, storage, location):
        """Where the program's map_location puts STORAGE, saved at
        LOCATION (_map_device)."""
        return _map_device(self.torch, self.map, storage, location)

    def restore(self, storage, location):
        torch = self.torch
        dev = self.device(storage, location)
        if dev.type != "cuda":
            if dev == storage.device:
                return storage
            from torch.serialization import default_restore_location
            return default_restore_location(storage, str(dev))
        with self.fake():
            base = torch.empty(storage.nbytes(), dtype=torch.uint8,
                               device=dev)
        self.gpu[id(storage)] = (storage, base)
        return storage

    def rebuild(self, orig, storage, offset, size, stride):
        """torch._utils._rebuild_tensor: a fake view of the GPU storage
        for a storage put on a GPU, the host's own tensor otherwise."""
        ent = self.gpu.get(id(storage._untyped_storage))
        if ent is None:
            return orig(storage, offset, size, stride)
        real = orig(storage, offset, size, stride)
        with self.fake():
            # a view, as set_ makes it (set_ would be a write to the
            # storage, which forgets the values of the tensors on it)
            t = ent[1].view(storage.dtype).as_strided(size, stride, offset)
        from . import values
        values.loaded(self.rec, t, real)
        return t


_SAVE_REC = [None]   # the recorder whose values _rebuild_fake gives back


def patch_save(torch, files, rec=None):
    """torch.save of fake tensors (a CUDA model, its state_dict, an
    optimizer's): each is written as its shape, dtype and strides, to the
    scratch copy of the path (Files), with the values the recorder knows
    of it (values.Values.real: every tensor under --values cpu, a small
    one of known values under the rules), as torch.save writes a
    storage's bytes (torch.serialization's _save copies it to the host);
    torch.load of a path saved so reads it back with those values, zeros
    where none were known.  A FakeTensor pickled otherwise would carry
    the fake mode along, which does not pickle; pickle.dumps of one (no
    torch.save) is reduced the same way."""
    from torch._subclasses.fake_tensor import FakeTensor
    orig_save, orig_load = torch.save, torch.load
    _SAVE_REC[0] = rec
    vs = rec.known.values if rec is not None and \
        getattr(rec, "known", None) is not None else None

    def reduce_ex(self, proto):
        real = None
        if vs is not None:
            real = vs.real(self)
            if real is not None:
                with vs.unset():
                    real = None if real.numel() == 0 else bytes(
                        real.detach().contiguous().reshape(-1)
                        .view(torch.uint8).numpy())
        return (_rebuild_fake, (tuple(self.shape), tuple(self.stride()),
                                self.dtype, str(self.device),
                                bool(self.requires_grad), real))

    def where(f, mode):
        if isinstance(f, (str, bytes, os.PathLike)):
            return files.path(f, mode)
        return f

    # The same for pickle itself (Tensor.__reduce_ex__: a real tensor
    # pickles with its storage's bytes), for the whole recording:
    # Stable-Baselines3's save cloudpickles ARS's `weights`, a host
    # tensor the recorder keeps fake (param_new), and pickle.loads of it
    # is _rebuild_fake's.  (Picklers that reduce FakeTensor themselves,
    # Inductor's cache keys, go by their dispatch_table, ahead of this.)
    # copy.copy reduces by __reduce_ex__ too, and rebuilds from the same
    # storage (_rebuild_tensor_v2 of the tensor's own): a tensor sharing
    # it, nothing allocated.  __copy__, which copy.copy asks first, keeps
    # FakeTensor's own reduction for it.
    had = FakeTensor.__dict__.get("__reduce_ex__")
    had_copy = FakeTensor.__dict__.get("__copy__")
    own = FakeTensor.__reduce_ex__

    def copy_(self):
        return copy._reconstruct(self, None, *own(self, 4))
    FakeTensor.__reduce_ex__ = reduce_ex
    FakeTensor.__copy__ = copy_

    def save(obj, f, *a, **k):
        return orig_save(obj, where(f, "wb"), *a, **k)

    def load(f, map_location=None, *a, **k):
        from torch._subclasses.fake_tensor import unset_fake_temporarily
        import torch._utils as tu
        prev = _LOAD_MAP[0]
        _LOAD_MAP[0] = map_location
        ld = None
        fake = torch._C._get_dispatch_mode(
            torch._C._TorchDispatchModeKey.FAKE)
        if rec is not None and fake is not None and not (
                isinstance(map_location, (str, torch.device)) and
                torch.device(map_location).type == "meta"):
            # (map_location "meta": PyTorch's own fake-mode load)
            ld = _Load(torch, rec, map_location)
        if ld is None:
            try:
                return orig_load(where(f, "rb"), map_location, *a, **k)
            finally:
                _LOAD_MAP[0] = prev
        orig_rebuild = tu._rebuild_tensor
        prev_ld = _LOADING[0]
        _LOADING[0] = ld
        tu._rebuild_tensor = lambda s, o, z, t: ld.rebuild(orig_rebuild, s,
                                                           o, z, t)
        # a pickled nn.Parameter (a whole model pickled: yolov7's
        # checkpoints) is made of its data by _rebuild_parameter (or
        # _rebuild_parameter_with_state), here with the fake mode set
        # aside: the data's values go with it (values.loaded_param)
        params = {n: getattr(tu, n) for n in (
            "_rebuild_parameter", "_rebuild_parameter_with_state")
            if hasattr(tu, n)}

        def param(orig):
            # (wraps: torch.load's weights_only allowlist knows a
            # function by its module and name)
            @functools.wraps(orig)
            def rebuild(data, *a, **k):
                p = orig(data, *a, **k)
                from . import values
                values.loaded_param(rec, p, data)
                return p
            return rebuild
        for n, fn in params.items():
            setattr(tu, n, param(fn))
        try:
            with unset_fake_temporarily():
                return orig_load(where(f, "rb"), ld.restore, *a, **k)
        finally:
            for n, fn in params.items():
                setattr(tu, n, fn)
            tu._rebuild_tensor = orig_rebuild
            _LOADING[0] = prev_ld
            # the storages are the loaded tensors' own from here: the
            # map must not keep them once the program drops them (the
            # _Load can outlive the load; tests/recorder_load_scope.sh)
            ld.gpu.clear()
            _LOAD_MAP[0] = prev

    try:
        torch.serialization.add_safe_globals([_rebuild_fake])
    except AttributeError:
        pass
    save.__wrapped__ = orig_save
    load.__wrapped__ = orig_load
    torch.save, torch.load = save, load
    import torch.serialization as ser
    ser.save, ser.load = save, load

    def undo():
        torch.save, torch.load = orig_save, orig_load
        ser.save, ser.load = orig_save, orig_load
        for name, was in (("__reduce_ex__", had), ("__copy__", had_copy)):
            if was is None:
                delattr(FakeTensor, name)
            else:
                setattr(FakeTensor, name, was)
    return undo


# -- libraries that ask whether a tensor is fake -----------------------------
def on_import(name, patch):
    """patch(module) once the module `name` is imported: now if it is
    (the fork server preloads some), else when the script imports it (a
    finder ahead of the others wraps its loader's exec_module).  patch
    returns its undo; on_import returns one that undoes it, or stops
    waiting for the import."""
    import importlib.abc
    undo = []
    if name in sys.modules:
        undo.append(patch(sys.modules[name]))
        return lambda: [u() for u in undo]

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname != name:
                return None
            for f in sys.meta_path:
                spec = f.find_spec(fullname, path, target) \
                    if f is not self and hasattr(f, "find_spec") else None
                if spec is not None and spec.loader is not None:
                    break
            else:
                return None
            loader = spec.loader
            run = loader.exec_module

            def exec_module(module):
                run(module)
                undo.append(patch(module))
            loader.exec_module = exec_module
            self.stop()
            return spec

        def stop(self):
            if self in sys.meta_path:
                sys.meta_path.remove(self)

    finder = Finder()
    sys.meta_path.insert(0, finder)

    def undo_all():
        finder.stop()
        for u in undo:
            u()
    return undo_all


def patch_cuda_home():
    """torch.utils.cpp_extension.CUDA_HOME as a CUDA build of PyTorch
    finds it, once the module is imported: the module sets it at import
    only where torch.cuda._is_compiled() and torch.version.cuda (never in
    the CPU build that records), from $CUDA_HOME or $CUDA_PATH, nvcc's
    folder or /usr/local/cuda (_find_cuda_home), None where none is.
    Libraries ask for include_paths(device_type="cuda") at import when
    torch.cuda.is_available() (xLSTM's sLSTM, even for its vanilla
    backend), which raises with CUDA_HOME None."""
    def patch(mod):
        was = getattr(mod, "CUDA_HOME", None)
        find = getattr(mod, "_find_cuda_home", None)
        if was is None and find is not None:
            mod.CUDA_HOME = find()

        def undo():
            mod.CUDA_HOME = was
        return undo
    return on_import("torch.utils.cpp_extension", patch)


def patch_fake_queries(mode_cls):
    """A library that asks whether a tensor is a FakeTensor, to tell a
    trace (torch.compile, export) from a run, gets the real run's answer
    for the recorder's tensors, which are fake only here: no.
    transformers' is_tracing(tensor) (import_utils.is_fake_tensor) is
    what its masking_utils._ignore_causal_mask_sdpa asks before it drops
    an all-ones padding mask for SDPA's is_causal: taken for a trace, the
    recording materialized a (batch, 1, q, kv) mask in each attention
    layer and chose the attention kernel for a masked call.  A tensor of
    another fake mode (the script's own) is still fake."""
    def patch(mod):
        orig = getattr(mod, "is_fake_tensor", None)
        if orig is None:
            return lambda: None

        def is_fake_tensor(x):
            return orig(x) and not isinstance(
                getattr(x, "fake_mode", None), mode_cls)
        mod.is_fake_tensor = is_fake_tensor
        return lambda: setattr(mod, "is_fake_tensor", orig)
    return on_import("transformers.utils.import_utils", patch)
