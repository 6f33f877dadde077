#!/bin/sh
# memsim record --fake: a thread of the script's running ops while the
# main thread runs others (Ultralytics' @threaded plot_images copies the
# GPU batch to the host, `images.cpu()`, while the trainer goes on) stopped
# the recording with "AssertionError: False, True" from
# in_kernel_invocation_manager, or made a FakeTensor's .device read
# "meta": FakeTensorMode keeps in_kernel_invocation on the mode, one for
# all threads, where the Meta dispatch key it mirrors is per thread.  Per
# thread now (fake.py's _Mode), and one op at a time recorded (Track's
# op_lock).  Its enter_stack too, what each `with fake_mode` found, for its
# exit to put back: a thread's end (the recorder's modes left) popped the
# main thread's entry of a nested `with fake_mode`, whose exit then
# cleared the main thread's only-lift-CPU-tensors flag, and its next
# torch.tensor(..., device="cuda") ran CUDA's own ("Found no NVIDIA
# driver"): Ultralytics' loss at the first validation of yolo11n at 640.
# Ultralytics' validation computes its loss under torch.inference_mode:
# `1.0 - iou` of an inference tensor stopped the recording with "Inference
# tensors do not track version counter" (known.py's straight-through
# note read its _version).  Nothing is noted of an inference tensor.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/t.py" <<'PY'
import sys
import threading
import torch

sys.setswitchinterval(1e-6)    # switch threads often: the race shows at once
x = torch.randn(64, 64, device="cuda")
bad = []

def plot(t):
    for _ in range(300):
        h = t.cpu().float()
        if t.device.type != "cuda" or h.device.type != "cpu":
            bad.append((t.device.type, h.device.type))

th = threading.Thread(target=plot, args=(x,))
th.start()
for _ in range(300):
    y = torch.ones_like(x) * 2
    if y.device.type != "cuda":
        bad.append(("main", y.device.type))
th.join()
print("threads", len(bad), bad[:3])
with torch.inference_mode():
    iou = torch.rand(1000, device="cuda")
    loss = ((1.0 - iou) * 2).sum()
print("inference", tuple(loss.shape), loss.device.type)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/t.csv" -- "$PY" t.py) \
	>"$tmp/err" 2>&1 || fail "two threads: $(tail -3 "$tmp/err")"
grep -qxF "threads 0 []" "$tmp/err" || fail "devices: $(cat "$tmp/err")"
grep -qxF "inference () cuda" "$tmp/err" || fail "no result: $(cat "$tmp/err")"
# x, each ones_like and its product (2 x 300), and the inference part's
# iou, 1.0 - iou, its product and their sum
n=$(awk -F, '$3=="alloc"' "$tmp/t.csv" | wc -l)
[ "$n" -eq 605 ] || fail "$n allocations, not 605"
# A short thread at each step (Ultralytics plots each of the first
# batches in a new one), the main thread making constants meanwhile
cat >"$tmp/m.py" <<'PY'
import sys
import threading
import torch

sys.setswitchinterval(1e-6)
x = torch.randn(64, 64, device="cuda")

def plot(t):
    t.cpu().float()

for i in range(200):
    th = threading.Thread(target=plot, args=(x,))
    th.start()
    for _ in range(5):
        c = torch.tensor([64, 64], device="cuda", dtype=torch.float32) * 2
        y = (x * c[0]).float()
    th.join()
print("many threads", tuple(y.shape), c.device.type)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/m.csv" -- "$PY" m.py) \
	>"$tmp/err" 2>&1 || fail "many threads: $(tail -3 "$tmp/err")"
grep -qxF "many threads (64, 64) cuda" "$tmp/err" || \
	fail "no result: $(cat "$tmp/err")"
finish threads
