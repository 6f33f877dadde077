#!/bin/sh
# What fake.run() replaces for the recording it undoes when the script
# ends (F.scaled_dot_product_attention, F.linear and F.rms_norm among
# them; assert_close's comparison and torch.jit.trace's name lookup),
# so that code after a recording in the same interpreter (the
# recorder's main() called from Python, a test) calls PyTorch's own
# functions.  torch.cuda's replacements (_patch_cuda) stay: a recording's
# process answers as the recorded device until it exits.  Skips (77)
# without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
SRC=$(cd "$(dirname "$0")/.." && pwd)

cat >"$tmp/script.py" <<'PY'
import torch
import torch.nn.functional as F
x = torch.randn(4, 3, 8, device="cuda")
F.linear(x.transpose(0, 1), torch.randn(5, 8, device="cuda"),
         torch.randn(5, device="cuda"))
F.rms_norm(x, (8,))
F.scaled_dot_product_attention(x[None], x[None], x[None])
PY
cat >"$tmp/check.py" <<'PY'
import sys
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensor
from memsim_record import __main__ as entry, lifecycle

names = {
    "F.scaled_dot_product_attention": lambda: F.scaled_dot_product_attention,
    "F.linear": lambda: F.linear,
    "F.rms_norm": lambda: F.rms_norm,
    "Tensor.__format__": lambda: torch.Tensor.__format__,
    "Tensor.numpy": lambda: torch.Tensor.numpy,
    "FakeTensor.tolist": lambda: FakeTensor.tolist,
    "Module._apply": lambda: torch.nn.Module._apply,
    "autograd.backward": lambda: torch.autograd.backward,
    "UntypedStorage.resize_": lambda: torch.UntypedStorage.resize_,
    "Parameter.__new__": lambda: torch.nn.Parameter.__new__,
    "TensorLikePair._compare_regular_values_close": lambda:
        torch.testing._comparison.TensorLikePair._compare_regular_values_close,
    "jit._trace._create_interpreter_name_lookup_fn": lambda:
        torch.jit._trace._create_interpreter_name_lookup_fn,
}
before = {k: f() for k, f in names.items()}
lifecycle.MAIN_PID = __import__("os").getpid()
code = entry.main(["--fake", "-o", sys.argv[1], "--", sys.argv[2]])
if code != 0:
    sys.exit("the recording failed: %d" % code)
left = [k for k, f in names.items() if f() is not before[k]]
print(" ".join(left) if left else "restored")
PY
PYTHONPATH="$SRC/traces${PYTHONPATH:+:$PYTHONPATH}" "$PY" "$tmp/check.py" \
	"$tmp/out.csv" "$tmp/script.py" >"$tmp/out" 2>"$tmp/err" ||
	fail "the recording: $(tail -3 "$tmp/err")"
[ "$(cat "$tmp/out")" = restored ] || fail "left replaced: $(cat "$tmp/out")"
[ -s "$tmp/out.csv" ] || fail "no trace"
finish recorder_restore
