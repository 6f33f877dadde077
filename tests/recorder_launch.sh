#!/bin/sh
# memsim record -- accelerate launch [ITS OPTIONS] SCRIPT ARGS: the
# launcher's options read as accelerate reads them and the environment
# its launcher gives the script (lifecycle.accelerate_launch): a
# one-process launch records as the script alone under that environment
# does, byte for byte; --multi_gpu --num_processes N records one rank of
# N (--rank); what is not modelled (DeepSpeed) and a rank outside the
# launch are one-line errors.  Skips (77) without PyTorch or accelerate.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
acc=$(dirname "$PY")/accelerate
[ -x "$acc" ] && "$PY" -c 'import accelerate' 2>/dev/null ||
	{ echo "no accelerate: skipped"; exit 77; }
# accelerate's config file, if the machine has one, is not this test's
export HF_HOME="$tmp/hf"
cd "$tmp" || exit 1
cat >s.py <<'PY'
import sys, torch
from accelerate import Accelerator
acc = Accelerator()
m = torch.nn.Linear(512, 512)
opt = torch.optim.AdamW(m.parameters())
m, opt = acc.prepare(m, opt)
for _ in range(2):
    acc.backward(m(torch.randn(64, 512, device=acc.device)).sum())
    opt.step()
    opt.zero_grad()
print("launched", acc.num_processes, acc.process_index, acc.mixed_precision)
PY
$MEMSIM record -o l.csv -- "$acc" launch --num_processes 1 --num_machines 1 \
	--mixed_precision fp16 --dynamo_backend no s.py >/dev/null 2>err ||
	fail "launch: $(tail -3 err)"
grep -qx "launched 1 0 fp16" err || fail "launch: $(cat err)"
ACCELERATE_MIXED_PRECISION=fp16 $MEMSIM record -o p.csv -- "$PY" s.py \
	>/dev/null 2>err || fail "python3: $(tail -3 err)"
# the same rows (the order of frees that die together aside: garbage
# collection's), the same peaks
$MEMSIM run --json l.csv >l.json && $MEMSIM run --json p.csv >p.json ||
	fail "run"
for k in allocated_bytes.all.peak reserved_bytes.all.peak; do
	[ -n "$(key $k l.json)" ] && [ "$(key $k l.json)" = "$(key $k p.json)" ] ||
		fail "launch and python3: $k $(key $k l.json) and $(key $k p.json)"
done
cut -d, -f3- l.csv | sort >l.rows
cut -d, -f3- p.csv | sort | cmp -s - l.rows ||
	fail "accelerate launch and python3 record different rows"
$MEMSIM record --rank 2 -o m.csv -- "$acc" launch --multi_gpu \
	--num_processes 4 --num_machines 1 --mixed_precision no \
	--dynamo_backend no s.py >/dev/null 2>err || fail "multi_gpu: $(tail -3 err)"
grep -qx "launched 4 2 no" err || fail "multi_gpu: $(cat err)"
expect_error "DeepSpeed is not modelled" $MEMSIM record -o d.csv -- "$acc" \
	launch --use_deepspeed s.py
expect_error "rank 1: must be below the 1 process it launches" $MEMSIM \
	record --rank 1 -o d.csv -- "$acc" launch --num_processes 1 \
	--num_machines 1 --mixed_precision no --dynamo_backend no s.py
expect_error "no script given after 'launch'" $MEMSIM record -o d.csv -- \
	"$acc" launch
[ ! -e d.csv ] || fail "a trace written by a refused launch"
finish recorder_launch
