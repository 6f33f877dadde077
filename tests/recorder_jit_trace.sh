#!/bin/sh
# memsim record --fake under torch.jit.trace (tensorboard's
# SummaryWriter.add_graph, an export): the tracer runs the model once,
# its GPU allocations those of a forward, and the traced module's graph
# has the ops a CPU trace has.  convolution is not traced itself
# (TraceType's generator's DONT_RECORD_TRACE): its kernel's _convolution
# is, which the fake mode never called (the graph had the convolution's
# output as a constant, or the meta kernel's shape checks failed on
# sizes read as traced tensors).  Calling the traced module (its
# aten::_convolution recorded as the convolution, workspace and all)
# records what the eager module does, forward and backward.  The
# trace's check compares outputs as a GPU run does (assert_close's
# isclose, close).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 16 * 16, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(x.flatten(1))


def ops(t):
    return " ".join(n.kind() for n in t.inlined_graph.nodes()
                    if n.kind().startswith("aten::"))


marks = []


def mark(n):
    # a segment's end: an allocation of N bytes, kept
    marks.append(torch.empty(n, dtype=torch.uint8, device="cuda"))


def step(f):
    f(x).sum().backward()
    m.zero_grad(set_to_none=True)


m = Net().cuda().eval()
x = torch.randn(4, 16, 16, 16, device="cuda")
with torch.no_grad():
    m(x)
    mark(101)
    y = m(x)
    del y
    mark(102)
    t = torch.jit.trace(m, x, check_trace=False)
    mark(103)
    y = t(x)
    del y
    mark(104)
print("eval", ops(t))
m.train()
step(m)
mark(105)
step(m)
mark(106)
t = torch.jit.trace(m, x)
mark(107)
step(t)
mark(108)
print("train", ops(t))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
# the graphs of a CPU trace (the training one's num_batches_tracked += 1)
want="eval aten::_convolution aten::batch_norm aten::relu aten::flatten aten::linear
train aten::_convolution aten::add_ aten::batch_norm aten::relu aten::flatten aten::linear"
[ "$(grep -E '^(eval|train) ' "$tmp/err")" = "$want" ] ||
	fail "graphs: $(grep -E '^(eval|train) ' "$tmp/err")"
# seg A B: the allocations (+size) and frees (-size) between the marks
# of A and B bytes in $csv
csv=$tmp/a.csv
seg() {
	awk -F, -v a="+$1" -v b="+$2" '
		$3 == "alloc" { sz[$4] = $5; e = "+" $5 }
		$3 == "free_completed" { e = "-" sz[$4] }
		$3 != "alloc" && $3 != "free_completed" { next }
		e == b { on = 0 } on { printf "%s%s", s, e; s = " " }
		e == a { on = 1 } END { print "" }' "$csv"
}
# Without grad, eval: the convolution's output (4*16*16*16 floats)
# and cuDNN's workspace (the plan's, kernels.py's rule: 140304 bytes)
# freed on return, the batch norm's output and its per-channel mean and
# inverse std (16 floats each, freed on return), the convolution's
# freed, the relu's, the batch norm's freed, the linear's (4*10
# floats), then the relu's and the output freed: the eager call, the
# trace's run, the traced module's (its aten::_convolution).
want="+65536 +140304 -140304 +65536 +64 +64 -64 -64 -65536 +65536 -65536 +160 -65536 -160"
[ "$(seg 101 102)" = "$want" ] || fail "eager: $(seg 101 102)"
[ "$(seg 102 103)" = "$want" ] || fail "trace: $(seg 102 103)"
[ "$(seg 103 104)" = "$want" ] || fail "traced: $(seg 103 104)"
# Training, forward and backward: the traced module as the eager one.
e=$(seg 105 106)
[ -n "$e" ] && [ "$(seg 107 108)" = "$e" ] ||
	fail "traced training step: $(seg 107 108) (eager: $e)"
# The training trace's check (_check_trace, torch.jit.trace's default):
# a second trace, then the traced module, the model and the second
# trace's module run (a forward each, five convolutions' workspaces in
# all), their outputs compared with assert_close, close as on a GPU
# (allclose:true, values.host_bool), no TracerWarning.
n=$(seg 106 107 | tr ' ' '\n' | grep -c '^+140304$')
[ "$n" = 5 ] || fail "the check's forwards: $n"
grep -q TracerWarning "$tmp/err" && fail "$(grep -A3 TracerWarning "$tmp/err")"
a=$(awk -F, '$3 == "annotate" { sub(/ .*/, "", $8); print $8 }' "$tmp/a.csv" |
	sort | uniq -c | tr -s ' ')
[ "$a" = " 2 allclose:true" ] || fail "assumptions: $a"
# The recorder's own Python for cuDNN's LSTM and GRU (rnn.py), the
# fused rms_norm and scaled_dot_product_attention's backend: traced as
# the one op a CUDA run's graph has (jittrace.call), its tensors made
# untraced, those of an eager forward.  nn.MultiheadAttention's
# reshaped bmm output is freed before its out-projection's output is
# made, as eagerly: the tracer's name lookup reads the program's frame's
# locals, not those of the recorder's F.linear (jittrace.install).
cat >"$tmp/c.py" <<'PY'
import torch
import torch.nn as nn
import torch.nn.functional as F


class R(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 16, batch_first=True)
        self.gru = nn.GRU(16, 16)
        self.att = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, h):
        h = self.gru(self.lstm(h)[0])[0]
        h = self.att(h, h, h)[0]
        q = F.rms_norm(h, (16,)).view(2, 14, 2, 8).transpose(1, 2)
        return F.scaled_dot_product_attention(q, q, q, is_causal=True)


marks = []


def mark(n):
    marks.append(torch.empty(n, dtype=torch.uint8, device="cuda"))


r = R().cuda()
h = torch.randn(2, 14, 16, device="cuda", requires_grad=True)
r(h)
mark(101)
y = r(h)
del y
mark(102)
t = torch.jit.trace(r, (h,), check_trace=False)
mark(103)
print("rnn", " ".join(n.kind() for n in t.inlined_graph.nodes()
                      if n.kind().startswith("aten::")))
PY
csv=$tmp/c.csv
(cd "$tmp" && $MEMSIM record --fake -o "$csv" -- "$PY" c.py) \
	>"$tmp/err" 2>&1 || fail "record c.py: $(tail -3 "$tmp/err")"
want="rnn aten::size aten::zeros aten::zeros aten::lstm aten::size "\
"aten::zeros aten::gru aten::transpose aten::size aten::size "\
"aten::size aten::div aten::Int aten::Int aten::Int aten::size "\
"aten::linear aten::unflatten aten::unsqueeze aten::transpose "\
"aten::squeeze aten::contiguous aten::select aten::select "\
"aten::select aten::mul aten::Int aten::view aten::transpose "\
"aten::size aten::mul aten::Int aten::view aten::transpose "\
"aten::size aten::mul aten::Int aten::view aten::transpose "\
"aten::mul aten::transpose aten::bmm aten::softmax aten::bmm "\
"aten::transpose aten::mul aten::Int aten::reshape aten::linear "\
"aten::size aten::view aten::transpose aten::rms_norm aten::view "\
"aten::transpose aten::scaled_dot_product_attention"
grep -qxF "$want" "$tmp/err" || fail "rnn graph: $(grep '^rnn' "$tmp/err")"
e=$(seg 101 102)
[ -n "$e" ] && [ "$(seg 102 103)" = "$e" ] ||
	fail "rnn trace: $(seg 102 103) (eager: $e)"
# tensorboard's SummaryWriter.add_graph (pytorch-cifar100's training
# script calls it on its CUDA ResNet): the model traced in eval mode, checked,
# its graph written (the events file read back).
if "$PY" -c 'import tensorboard' 2>/dev/null; then
	cat >"$tmp/b.py" <<'PY'
import tempfile
import torch
from torch.utils.tensorboard import SummaryWriter
from tensorboard.backend.event_processing.event_accumulator import \
    EventAccumulator
exec(open("a.py").read().split("def ops")[0])
m = Net().cuda()
x = torch.randn(4, 16, 16, 16, device="cuda")
d = tempfile.mkdtemp()
w = SummaryWriter(d)
w.add_graph(m, x)
w.close()
ea = EventAccumulator(d)
ea.Reload()
print("nodes", " ".join(n.op for n in ea.Graph().node
                        if n.op.startswith("aten::")))
PY
	(cd "$tmp" && $MEMSIM record --fake -o "$tmp/b.csv" -- "$PY" b.py) \
		>"$tmp/err" 2>&1 || fail "record add_graph: $(tail -3 "$tmp/err")"
	want="nodes aten::_convolution aten::batch_norm aten::relu aten::flatten aten::linear"
	grep -qxF "$want" "$tmp/err" || fail "add_graph: $(grep nodes "$tmp/err")"
	# the trace's forward and its check's four
	n=$(awk -F, '$3 == "alloc" && $5 == 140304' "$tmp/b.csv" | wc -l)
	[ "$n" -eq 5 ] || fail "add_graph's forwards: $n"
else
	echo "no tensorboard: add_graph not tried"
fi
finish recorder_jit_trace.sh
