#!/bin/sh
# memsim record end to end: needs Python 3 and PyTorch (CI installs the
# CPU build, which is a machine with no GPU); skips (77) without them.
# Small models defined here; no downloaded weights.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
peak() { sed -n 's/.*peak live \([0-9]*\) bytes.*/\1/p' "$1"; }

cat >"$tmp/mlp.py" <<'PY'
import sys
import torch
import torch.nn as nn
B = int(sys.argv[1]) if len(sys.argv) > 1 else 64
class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.blocks = nn.ModuleList(nn.Sequential(nn.Linear(512, 2048), nn.GELU(),
                                               nn.Linear(2048, 512)) for _ in range(6))
        s.head = nn.Linear(512, 10)
    def forward(s, x):
        for b in s.blocks:
            x = x + b(x)
        return s.head(x)
m = Net().cuda()
opt = torch.optim.AdamW(m.parameters())
for _ in range(2):
    x = torch.randn(B, 512, device="cuda")
    loss = nn.functional.cross_entropy(m(x), torch.randint(0, 10, (B,), device="cuda"))
    loss.backward()
    opt.step()
    opt.zero_grad()
    print("loss", loss.item())
print("total_memory", torch.cuda.get_device_properties(0).total_memory)
PY

# A training script: exit 0, a trace memsim reads, every category there.
$MEMSIM record -o "$tmp/mlp.csv" -- "$PY" "$tmp/mlp.py" 256 2>"$tmp/err" ||
	fail "record mlp: $(tail -3 "$tmp/err")"
for c in parameter gradient optimizer activation input; do
	grep -q ",alloc,.*,$c," "$tmp/mlp.csv" || fail "no $c allocation"
done
grep -q ',parameter,Net.blocks.0.0.weight$' "$tmp/mlp.csv" ||
	fail "parameter site"
$MEMSIM run "$tmp/mlp.csv" >/dev/null || fail "memsim run of the recording"
# The parameters alone: 6 x (512x2048 + 2048 + 2048x512 + 512) + 512x10 + 10
# floats; AdamW adds two states each and backward one gradient each.
params=$(( (6 * (512 * 2048 + 2048 + 2048 * 512 + 512) + 5120 + 10) * 4 ))
p=$(peak "$tmp/err")
[ -n "$p" ] && [ "$p" -ge $((4 * params)) ] ||
	fail "peak live $p below 4 x the parameters ($params)"
grep -q "total_memory 150109880320" "$tmp/err" || fail "h200 total_memory"
# .item() is an assumption; memsim info shows the count.
n=$(grep -c ',annotate,.*,assumption,item:float$' "$tmp/mlp.csv")
[ "$n" -eq 2 ] || fail "$n .item() assumptions, expected 2"
# The same recording with the GPU hidden is the same trace: the same rows
# (action, size, stream, tags) and the same peaks.  Deaths come from
# Python's reference counting and its cycle collector, whose runs can fall
# between other requests from one process to the next, so the order of a
# few frees may differ (docs/recording.md).
CUDA_VISIBLE_DEVICES= $MEMSIM record -o "$tmp/mlp2.csv" -- "$PY" "$tmp/mlp.py" 256 2>/dev/null
rows() { cut -d, -f3,5- "$1" | sort; }
rows "$tmp/mlp.csv" >"$tmp/r1"; rows "$tmp/mlp2.csv" >"$tmp/r2"
cmp -s "$tmp/r1" "$tmp/r2" || fail "CUDA_VISIBLE_DEVICES= changes the trace's rows"
peaks() { $MEMSIM run --json "$1" | grep -E '"(allocated|reserved)_bytes.all.peak"'; }
[ "$(peaks "$tmp/mlp.csv")" = "$(peaks "$tmp/mlp2.csv")" ] ||
	fail "CUDA_VISIBLE_DEVICES= changes the peaks"

# --device answers CUDA's queries.
$MEMSIM record -o "$tmp/a100.csv" --device a100-40gb -- "$PY" "$tmp/mlp.py" 8 2>"$tmp/err" ||
	fail "record --device"
grep -q "total_memory 42297270272" "$tmp/err" || fail "a100-40gb total_memory"

# Strategies on an unmodified script: checkpointing every block and bf16
# autocast each lower the peak.
$MEMSIM record -o "$tmp/ck.csv" --checkpoint every:1 -- "$PY" "$tmp/mlp.py" 4096 2>"$tmp/ck.err" ||
	fail "record --checkpoint"
$MEMSIM record -o "$tmp/amp.csv" --amp bf16 -- "$PY" "$tmp/mlp.py" 4096 2>"$tmp/amp.err" ||
	fail "record --amp"
$MEMSIM record -o "$tmp/base.csv" -- "$PY" "$tmp/mlp.py" 4096 2>"$tmp/base.err" ||
	fail "record base"
b=$(peak "$tmp/base.err"); c=$(peak "$tmp/ck.err"); a=$(peak "$tmp/amp.err")
[ -n "$b" ] && [ -n "$c" ] && [ "$c" -lt "$b" ] || fail "checkpoint peak $c not below $b"
[ -n "$a" ] && [ "$a" -lt "$b" ] || fail "amp peak $a not below $b"
$MEMSIM record -o "$tmp/x.csv" --checkpoint every:0 -- "$PY" "$tmp/mlp.py" 2>"$tmp/err" &&
	fail "--checkpoint every:0 accepted"
grep -q "checkpoint" "$tmp/err" || fail "--checkpoint every:0: $(cat "$tmp/err")"

# Data-dependent shapes: nonzero selects --dynamic-fraction of the elements.
cat >"$tmp/nz.py" <<'PY'
import torch
x = torch.ones(1000, 1000, device="cuda")
i = x.nonzero()
PY
for f in 0.5 0.25; do
	$MEMSIM record -o "$tmp/nz.csv" --dynamic-fraction $f -- "$PY" "$tmp/nz.py" 2>/dev/null ||
		fail "record nonzero"
	want=$(awk -v f=$f 'BEGIN { printf "%d", f * 1000000 * 2 * 8 }')
	grep -q ",alloc,[0-9]*,$want,0," "$tmp/nz.csv" || fail "nonzero at $f: no $want-byte alloc"
done
$MEMSIM info "$tmp/nz.csv" | grep -q "annotate 1" || fail "info: nonzero assumption"

# One rank of a 2-GPU DDP job with no GPU.
cat >"$tmp/ddp.py" <<'PY'
import torch, torch.nn as nn, torch.distributed as dist
dist.init_process_group("nccl")
torch.cuda.set_device(dist.get_rank())
m = nn.parallel.DistributedDataParallel(nn.Linear(1024, 1024).cuda(), device_ids=[dist.get_rank()])
for _ in range(2):
    m(torch.randn(64, 1024, device="cuda")).sum().backward()
PY
$MEMSIM record -o "$tmp/ddp.csv" --world-size 2 --rank 1 -- "$PY" "$tmp/ddp.py" 2>"$tmp/err" ||
	fail "record DDP: $(tail -2 "$tmp/err")"

# Failures: a clear message, the script's status, and no trace left.
printf 'import torch, sys\ntorch.zeros(4, device="cuda")\nsys.exit(3)\n' >"$tmp/exit3.py"
$MEMSIM record -o "$tmp/out.csv" -- "$PY" "$tmp/exit3.py" 2>"$tmp/err"
[ $? -eq 3 ] || fail "exit(3): status"
grep -q "exited with status 3" "$tmp/err" || fail "exit(3): $(cat "$tmp/err")"
printf 'import torch\ntorch.zeros(4, device="cuda")\nraise ValueError("boom")\n' >"$tmp/crash.py"
$MEMSIM record -o "$tmp/out.csv" -- "$PY" "$tmp/crash.py" 2>"$tmp/err" && fail "crash succeeded"
grep -q "raised ValueError: boom" "$tmp/err" || fail "crash: $(cat "$tmp/err")"
printf 'import torch\nprint(torch.ones(3).sum())\n' >"$tmp/cpu.py"
$MEMSIM record -o "$tmp/out.csv" -- "$PY" "$tmp/cpu.py" 2>"$tmp/err" && fail "no-GPU script succeeded"
grep -q "never allocated GPU memory" "$tmp/err" || fail "no GPU: $(cat "$tmp/err")"
$MEMSIM record -o "$tmp/out.csv" -- "$PY" "$tmp/missing.py" 2>"$tmp/err" && fail "missing script succeeded"
ls "$tmp"/out.csv* >/dev/null 2>&1 && fail "a partial trace was left: $(ls "$tmp"/out.csv*)"

# torch.compile under --fake: tests/recorder_compile.sh.

finish recorder.sh
