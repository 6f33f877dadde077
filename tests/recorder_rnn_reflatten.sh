#!/bin/sh
# memsim record --fake: an RNN flattened again (flatten_parameters after
# .cuda(), .half(), or called by the program: tacotron2's encoder at each
# inference) copies its weights into a new buffer
# (_cudnn_rnn_flatten_weight) and the old one is freed with its last
# view.  The recorder's set_ onto the new buffer went through
# FakeTensorMode's dispatch cache, whose key kept the old storage: every
# buffer lived to the end (tacotron2's fp16 inference +11.8% reserved on
# the H100, whose trace frees each old buffer as the new one is made:
# after .cuda() 6,307,840 bytes, after .half() 3,153,920, after the
# encoder's flatten 3,153,920).  Needs Python 3 and PyTorch; skips (77)
# without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
m = torch.nn.LSTM(512, 256, 1, bidirectional=True).cuda()
print("built", torch.cuda.memory_allocated())
m.cuda()
print("cuda", torch.cuda.memory_allocated())
m.half()
print("half", torch.cuda.memory_allocated())
m.flatten_parameters()
print("flat", torch.cuda.memory_allocated())
x = torch.randn(7, 2, 512, device="cuda", dtype=torch.half)
with torch.no_grad():
    m(x)
print("ran", torch.cuda.memory_allocated())
PY
(cd "$tmp" && $MEMSIM record --fake -o a.csv -- "$PY" a.py) >"$tmp/out" \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
# the weight space: 2 directions x 4 gates x 256 x (512 + 256 + 2) x s
# (and x's 14,336 bytes at the end)
for want in "built 6307840" "cuda 6307840" "half 3153920" "flat 3153920" "ran 3168256"; do
	grep -qx "$want" "$tmp/err" || fail "not '$want': $(grep -E '^(built|cuda|half|flat|ran) ' "$tmp/err" | tr '\n' ' ')"
done
# four flat buffers: two fp32 (built, .cuda()), two fp16 (.half(),
# flatten_parameters()), each freed by the next
n32=$(awk -F, '$3 == "alloc" && $5 == 6307840' "$tmp/a.csv" | wc -l)
n16=$(awk -F, '$3 == "alloc" && $5 == 3153920' "$tmp/a.csv" | wc -l)
[ "$n32" -eq 2 ] && [ "$n16" -eq 2 ] || fail "flat buffers: $n32 fp32, $n16 fp16"
finish recorder_rnn_reflatten.sh
