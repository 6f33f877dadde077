#!/bin/sh
# memsim record --fake: Module.share_memory() of a model on the GPU (as
# pytorch/examples' mnist_hogwild does with --cuda, before its
# torch.multiprocessing workers) stopped the recording with "_share_fd_:
# only available on CPU": a fake tensor's storage is a meta one, which
# UntypedStorage.share_memory_ sends to the CPU's shm_open path, where
# PyTorch passes over every storage off the CPU.  A GPU storage of the
# recording is now returned unchanged (host.patch_share_memory); a host
# tensor still moves to shared memory.  And a GPU tensor then sent to
# another process (mp.Process's arguments under spawn) stops the
# recording with one clear error where pickle failed on the fake mode
# ("Can't pickle local object"): the recording is of one process
# (host.patch_process_send).  Needs Python 3 and PyTorch; skips (77)
# without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/h.py" <<'PY'
import sys
import torch
import torch.multiprocessing as mp


def child(m):
    pass


if __name__ == "__main__":
    m = torch.nn.Linear(512, 512).cuda()
    ptrs = [p.data_ptr() for p in m.parameters()]
    m.share_memory()
    print("shared", [p.data_ptr() for p in m.parameters()] == ptrs,
          all(p.is_cuda for p in m.parameters()))
    y = m(torch.randn(64, 512, device="cuda"))
    print("ran", tuple(y.shape))
    c = torch.randn(256).share_memory_()
    print("host", c.is_shared())
    if len(sys.argv) > 1:
        mp.set_start_method("spawn", force=True)
        p = mp.Process(target=child, args=(m,))
        p.start()
        p.join()
        print("joined")
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/h.csv" -- "$PY" h.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "shared True True" "ran (64, 512)" "host True"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
# the weight (1 MiB), the bias, the input and the output, on the GPU
n=$(grep -c ',alloc,' "$tmp/h.csv" 2>/dev/null || echo 0)
[ "$n" -ge 4 ] || fail "$n allocations in the trace"
grep -q ',1048576,0,parameter,' "$tmp/h.csv" ||
	fail "no 1 MiB weight in the trace: $(head -5 "$tmp/h.csv")"
if (cd "$tmp" && $MEMSIM record --fake -o "$tmp/s.csv" -- "$PY" h.py spawn) \
	>"$tmp/err" 2>&1; then
	fail "a GPU tensor sent to a spawned process recorded: $(tail -3 "$tmp/err")"
fi
grep -q "memsim record: a cuda tensor is sent to another process (torch.multiprocessing)" "$tmp/err" ||
	fail "no clear error: $(tail -5 "$tmp/err")"
grep -q "pickle local object" "$tmp/err" && fail "pickle's error: $(tail -3 "$tmp/err")"
grep -qxF "joined" "$tmp/err" && fail "the process ran"
finish recorder_share_memory.sh
