#!/bin/sh
# memsim record --fake with the fake boundary at the device
# (docs/recording-boundary.md): host code runs for real, values that cross
# from the GPU to the host are real CPU tensors, the script's files are
# never written.  One script per failure kind of issue 25 (1 to 5), each of
# which stopped the recorder before the boundary moved.  Skips (77) without
# PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# allocs FILE: "size,category" of every alloc row, counted
allocs() { grep ',alloc,' "$1" | cut -d, -f5,7 | sort | uniq -c | awk '{print $1 "x" $2}' | tr '\n' ' '; }

# Kind 1: a 0-dim GPU tensor formatted for a log line, a dict of them;
# .cpu().numpy() and .tolist() of GPU tensors.
cat >"$tmp/k1.py" <<'PY'
import torch
m = torch.nn.Linear(8, 8).cuda()
loss = m(torch.randn(4, 8, device="cuda")).pow(2).mean()
losses = {"train": loss, "val": loss.detach()}
print(f"loss {loss:.4f}", {k: f"{v:.3f}" for k, v in losses.items()})
print("right %s|" % format(loss.detach(), ">8.2f"))
a = m.weight.detach().cpu().numpy()
b = m.bias.detach().to("cpu")
print("cpu", type(a).__name__, a.shape, a.dtype, type(b).__name__, tuple(b.shape),
      m(torch.ones(2, 8, device="cuda")).tolist()[1][:2])
PY
$MEMSIM record -o "$tmp/k1.csv" -- "$PY" "$tmp/k1.py" >"$tmp/out" 2>&1 ||
	fail "kind 1: $(tail -3 "$tmp/out")"
grep -q "^loss 1.0000 {'train': '1.000', 'val': '1.000'}$" "$tmp/out" ||
	fail "kind 1: format of a 0-dim GPU tensor: $(head -3 "$tmp/out")"
grep -q "^right     1.00|$" "$tmp/out" || fail "kind 1: format spec >8.2f"
grep -q "^cpu ndarray (8, 8) float32 Tensor (8,) \[1.03125, 1.09375\]$" "$tmp/out" ||
	fail "kind 1: .cpu().numpy(), .to('cpu'), .tolist()"
# .cpu() of the 8x8 weight, of the bias, .tolist() of the 2x8 output:
# three tensors whose values are assumed (the weight and the bias by
# their init's range, host:range; the output's 16 floats spread from 0.5
# to 1.5, host:spread: its second row's first two 1.03125 and 1.09375),
# each counted once.
n=$(grep -cE ',annotate,.*,assumption,host:(float|range|spread) ' "$tmp/k1.csv")
[ "$n" -eq 3 ] || fail "kind 1: $n host assumptions, expected 3"

# Values read on the host in a loop that never ends without the real ones
# stop the recording (--item-repeats), as .item() does.
cat >"$tmp/loop.py" <<'PY'
import torch
x = torch.randn(3, device="cuda")
while x.cpu().tolist()[0] != 5.0:
    pass
PY
$MEMSIM record --item-repeats 50 -o "$tmp/loop.csv" -- "$PY" "$tmp/loop.py" >"$tmp/out" 2>&1 &&
	fail "loop: exit 0"
grep -q "loop.py:3 <module> asked for a float .item() 50 times" "$tmp/out" ||
	fail "loop: $(tail -1 "$tmp/out")"

# Kind 2: DataLoader workers over a dataset building its samples from
# numpy (.numpy() in the worker, values checked there and in the batch).
cat >"$tmp/k2.py" <<'PY'
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

class DS(Dataset):
    def __len__(self):
        return 48

    def __getitem__(self, i):
        x = torch.from_numpy(np.full(256, i, dtype=np.float32)) * 2
        assert float(x.numpy()[0]) == 2 * i
        return x, torch.tensor(i % 10)

m = nn.Linear(256, 10).cuda()
n = 0
for x, y in DataLoader(DS(), batch_size=16, num_workers=2):
    assert int(y[1]) == (n * 16 + 1) % 10 and float(x[3, 0]) == 2 * (n * 16 + 3)
    nn.functional.cross_entropy(m(x.cuda()), y.cuda()).backward()
    n += 1
print("batches", n)
PY
$MEMSIM record -o "$tmp/k2.csv" -- "$PY" "$tmp/k2.py" >"$tmp/out" 2>&1 ||
	fail "kind 2: $(tail -3 "$tmp/out")"
grep -q "^batches 3$" "$tmp/out" || fail "kind 2: batches"
# each batch: x 16 x 256 float32 and y 16 int64, inputs
a=$(allocs "$tmp/k2.csv")
case "$a" in *"3x16384,input "*) ;; *) fail "kind 2: x batches: $a" ;; esac
case "$a" in *"3x128,input "*) ;; *) fail "kind 2: y batches: $a" ;; esac

# Kind 3: batches cut from a numpy.memmap at offsets drawn with
# torch.randint on the CPU (nanoGPT's get_batch): never empty.
"$PY" -c "import numpy as np; (np.arange(5000) % 1000).astype(np.uint16).tofile('$tmp/data.bin')"
cat >"$tmp/k3.py" <<'PY'
import sys
import numpy as np
import torch
data = np.memmap(sys.argv[1], dtype=np.uint16, mode="r")
B, T = 4, 64
emb = torch.nn.Embedding(1000, 32).cuda()
for _ in range(2):
    ix = torch.randint(len(data) - T, (B,))
    x = torch.stack([torch.from_numpy(data[i:i + T].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + T].astype(np.int64)) for i in ix])
    assert int(((x[:, 1:] - y[:, :-1]) != 0).sum()) == 0
    x, y = x.pin_memory().to("cuda", non_blocking=True), y.to("cuda")
    emb(x).sum().backward()
print("batch", tuple(x.shape))
PY
$MEMSIM record -o "$tmp/k3.csv" -- "$PY" "$tmp/k3.py" "$tmp/data.bin" >"$tmp/out" 2>&1 ||
	fail "kind 3: $(tail -3 "$tmp/out")"
grep -q "^batch (4, 64)$" "$tmp/out" || fail "kind 3: batch shape"
# x and y of both steps: 4 x 64 int64 = 2048 bytes each; the embedding's
# output 4 x 64 x 32 float32
a=$(allocs "$tmp/k3.csv")
case "$a" in *"4x2048,input "*) ;; *) fail "kind 3: batches: $a" ;; esac
case "$a" in *"2x32768,activation "*) ;; *) fail "kind 3: activations: $a" ;; esac

# Kind 4: values drawn and computed on the CPU decide the program: a
# uniform_ draw indexes a list; stochastic-depth rates from linspace pick
# the blocks (0.2 and 0.3 are above 0.15: two blocks, exactly).
cat >"$tmp/k4.py" <<'PY'
import torch
import torch.nn as nn
choices = [16, 32]
k = choices[int(torch.empty(1).uniform_(0, 1).item() * len(choices))]
rates = [r.item() for r in torch.linspace(0, 0.3, 4)]
print("rates", rates)
blocks = nn.ModuleList(nn.Linear(64, k) for r in rates if r > 0.15).cuda()
print("blocks", len(blocks))
PY
$MEMSIM record -o "$tmp/k4.csv" -- "$PY" "$tmp/k4.py" >"$tmp/out" 2>&1 ||
	fail "kind 4: $(tail -3 "$tmp/out")"
want=$("$PY" -c 'import torch; print("rates", [r.item() for r in torch.linspace(0, 0.3, 4)])')
grep -qxF "$want" "$tmp/out" || fail "kind 4: linspace on the CPU not exact: $(grep rates "$tmp/out")"
grep -q "^blocks 2$" "$tmp/out" || fail "kind 4: blocks"
n=$(grep -c ',alloc,.*,parameter,' "$tmp/k4.csv")
[ "$n" -eq 4 ] || fail "kind 4: $n parameters, expected 2 blocks' weight and bias"
grep -q ',assumption,' "$tmp/k4.csv" && fail "kind 4: an assumption for a CPU value"

# Kind 5: torch.save of a CUDA model, its state_dict and its optimizer's,
# a log written; loaded back.  The user's files are never written.
mkdir "$tmp/user"
echo precious >"$tmp/user/ckpt.pt"
cat >"$tmp/k5.py" <<'PY'
import sys
import torch
import torch.nn as nn
d = sys.argv[1]
m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)).cuda()
opt = torch.optim.Adam(m.parameters())
m(torch.randn(4, 32, device="cuda")).sum().backward()
opt.step()
torch.save({"model": m.state_dict(), "opt": opt.state_dict()}, d + "/ckpt.pt")
torch.save(m, d + "/model.pt")
with open(d + "/log.txt", "w") as fp:
    fp.write("step 1\n")
with open(d + "/log.txt") as fp:
    assert fp.read() == "step 1\n"
sd = torch.load(d + "/ckpt.pt", map_location="cpu")
m.load_state_dict(sd["model"])
opt.load_state_dict(sd["opt"])
print("resumed", tuple(sd["model"]["0.weight"].shape), sd["model"]["0.weight"].device)
PY
$MEMSIM record -o "$tmp/k5.csv" -- "$PY" "$tmp/k5.py" "$tmp/user" >"$tmp/out" 2>&1 ||
	fail "kind 5: $(tail -3 "$tmp/out")"
grep -q "^resumed (64, 32) cpu$" "$tmp/out" || fail "kind 5: resumed"
grep -q "wrote 3 files; each went to a scratch folder" "$tmp/out" ||
	fail "kind 5: the count of redirected files"
[ "$(cat "$tmp/user/ckpt.pt")" = precious ] || fail "kind 5: the user's checkpoint was overwritten"
[ "$(ls "$tmp/user")" = ckpt.pt ] || fail "kind 5: files written: $(ls "$tmp/user")"
grep -q "_Mode" "$tmp/out" && fail "kind 5: the recorder's internals in the output"
# the checkpoint loaded to the CPU allocates nothing on the GPU: the
# same rows as without the load (the 4 parameters, 4 gradients, 8 states)
n=$(grep -c ',alloc,.*,parameter,' "$tmp/k5.csv")
[ "$n" -eq 4 ] || fail "kind 5: $n parameter allocations, expected 4"

# Index tensors are real whatever their size (host.BULK): a shuffled
# sampler over 300000 samples (randperm, 2.3 MiB) sees every sample once.
cat >"$tmp/perm.py" <<'PY'
import torch
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(300000)),
                                 batch_size=100000, shuffle=True)
s = 0
for (b,) in dl:
    s += int(b.sum())
    b.cuda()
print("sum", s)
PY
$MEMSIM record -o "$tmp/perm.csv" -- "$PY" "$tmp/perm.py" >"$tmp/out" 2>&1 ||
	fail "sampler: $(tail -3 "$tmp/out")"
grep -q "^sum 44999850000$" "$tmp/out" || fail "sampler: $(grep sum "$tmp/out")"
n=$(grep -c ',alloc,[0-9]*,800000,0,input,' "$tmp/perm.csv")
[ "$n" -eq 3 ] || fail "sampler: $n batches of 100000 int64, expected 3"

# A large CPU tensor made by a factory op stays fake (host.HOST_FAKE_BYTES):
# a model of 4 GiB of fp32 weights built on the CPU records in the usual
# time and memory; its weights read back are an assumption.
cat >"$tmp/big.py" <<'PY'
import resource
import torch
import torch.nn as nn
m = nn.Sequential(*[nn.Linear(16384, 16384, bias=False) for _ in range(4)])
print("rss below 2 GiB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 2 << 20)
m = m.cuda()
w = m[0].weight.detach().cpu()
print("fake on the host", type(w).__name__)
PY
$MEMSIM record -o "$tmp/big.csv" -- "$PY" "$tmp/big.py" >"$tmp/out" 2>&1 ||
	fail "big: $(tail -3 "$tmp/out")"
grep -q "^rss below 2 GiB True$" "$tmp/out" || fail "big: a CPU model's weights were made real"
grep -q "^fake on the host FakeTensor$" "$tmp/out" || fail "big: .cpu() of a 1 GiB tensor"
grep -q ',assumption,host:large-stays-fake ' "$tmp/big.csv" || fail "big: no assumption"
n=$(grep -c ",alloc,[0-9]*,1073741824,.*,parameter," "$tmp/big.csv")
[ "$n" -eq 4 ] || fail "big: $n 1 GiB parameters, expected 4"
# A file opened in a folder that does not exist (DINO's eval_linear.py
# with an --output_dir nobody made): the program's own error, shown as
# Python shows it, not as one raised inside memsim record (the file
# boundary's open passes the operating system's error on).
cat >"$tmp/nodir.py" <<'PY'
import torch
x = torch.zeros(4, device="cuda")
with open("missing/log.txt", "a") as f:
    f.write("x")
PY
(cd "$tmp" && $MEMSIM record -o "$tmp/nd.csv" -- "$PY" nodir.py) >"$tmp/out" 2>&1 &&
	fail "nodir: succeeded"
grep -q "^FileNotFoundError: \[Errno 2\] No such file or directory: 'missing/log.txt'$" "$tmp/out" ||
	fail "nodir: $(cat "$tmp/out")"
grep -q "raised inside memsim record" "$tmp/out" && fail "nodir: blamed on the recorder: $(cat "$tmp/out")"
[ ! -e "$tmp/missing" ] || fail "nodir: the folder was made"
# A model made on the meta device and loaded by accelerate's
# set_module_tensor_to_device (diffusers' from_pretrained: DiT's VAE):
# type(param)(value, requires_grad=...) is a parameter, as for a real one
# (it raised "FakeTensor.__new__() missing required argument: 'fake_mode'").
if "$PY" -c 'import accelerate' 2>/dev/null; then
	$MEMSIM record -o "$tmp/ml.csv" -- "$PY" "$SRC/recorder/meta_load.py" >"$tmp/out" 2>&1 ||
		fail "meta load: $(tail -3 "$tmp/out")"
	grep -q "^loaded cpu True (1024, 1024)$" "$tmp/out" || fail "meta load: $(cat "$tmp/out")"
	grep -q "^moved cuda:0 (8, 1024)$" "$tmp/out" || fail "meta load moved: $(cat "$tmp/out")"
	got=$(grep ',parameter,' "$tmp/ml.csv" | cut -d, -f5 | tr '\n' ' ')
	[ "$got" = "4194304 4096 " ] || fail "meta load parameters: $got"
else
	echo "accelerate not installed: its meta-device loading skipped"
fi
# A host index into a GPU tensor, then backward (CleanRL's C51):
# IndexBackward0 copies the host index (128 longs) to the GPU and puts
# the gradient (128 x 51 floats into 128 x 2 x 51 zeros).
$MEMSIM record -o "$tmp/hi.csv" -- "$PY" "$SRC/recorder/host_index.py" >"$tmp/out" 2>&1 ||
	fail "host index: $(tail -3 "$tmp/out")"
grep -q "^host index (102, 4)$" "$tmp/out" || fail "host index: $(cat "$tmp/out")"
got=$(grep ',alloc,.*,backward IndexBackward0$' "$tmp/hi.csv" | cut -d, -f5 | tr '\n' ' ')
[ "$got" = "52224 1024 " ] || fail "host index allocations: $got"
# An error inside the autograd engine's worker thread: caught, the
# script goes on; uncaught, its own traceback (it ended with signal 6).
$MEMSIM record -o "$tmp/be.csv" -- "$PY" "$SRC/recorder/backward_error.py" >"$tmp/out" 2>&1 ||
	fail "backward error caught: $(tail -3 "$tmp/out")"
[ "$(grep -c '^caught RuntimeError$' "$tmp/out")" = 3 ] || fail "backward error caught: $(cat "$tmp/out")"
grep -q '^grad True$' "$tmp/out" || fail "backward error, then backward: $(cat "$tmp/out")"
grep -q 'failed while attempting to run meta' "$tmp/out" && fail "backward error: FakeTensorMode's log shown"
rc=0
$MEMSIM record -o "$tmp/be2.csv" -- "$PY" "$SRC/recorder/backward_error.py" uncaught >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "backward error uncaught: exit $rc: $(tail -3 "$tmp/out")"
grep -q '^memsim record: .*backward_error.py raised RuntimeError: .*; no trace written$' "$tmp/out" ||
	fail "backward error uncaught: $(cat "$tmp/out")"
grep -q 'backward_error.py", line [0-9]*, in bad$' "$tmp/out" || fail "backward error: no hook's line: $(cat "$tmp/out")"
[ ! -e "$tmp/be2.csv" ] || fail "backward error uncaught: a trace written"

finish recorder_boundary
