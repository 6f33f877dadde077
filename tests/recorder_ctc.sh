#!/bin/sh
# memsim record --fake: F.ctc_loss and torch.logsumexp on the GPU
# (tests/recorder/ctc_loss.py, logsumexp.py).
# It stopped the recording at "aten::_use_cudnn_ctc_loss.Tensor has no
# fake (meta) kernel", and behind that (lengths as host tensors, the
# usual call) at a device error the GPU never raises: ctc_loss takes its
# fast path on plain tensors (the lengths read on the host), a fake
# log_probs its composite one.  Now _use_cudnn_ctc_loss is answered by
# PyTorch's conditions, the lengths go as the fast path reads them, and
# _ctc_loss and its backward allocate what LossCTC.cu's kernels do
# (dispatch.py): the output of ctc_loss.py on the H200 (PyTorch 2.11,
# 3 December 2026), line for line, but "large", whose peak the H200 puts
# 600064 bytes higher (17232384; the blanks' logsumexp path, not found)
# and cuDNN's own CTC, refused in one line naming the operator (its
# workspace is cuDNN's).  Needs Python 3 and PyTorch; skips (77)
# without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
DATA=${MSIM_TESTDATA:-tests/data}/record
$MEMSIM record --fake -o "$tmp/ctc.csv" -- "$PY" "$SRC/recorder/ctc_loss.py" \
	>"$tmp/out" 2>"$tmp/err" || fail "ctc: $(tail -3 "$tmp/err")"
grep -E '^(small|small-sum|sum-zero-inf|large-zero-inf|cudnn-off) ' \
	"$tmp/err" >"$tmp/got"
diff "$DATA/ctc_loss.h200.txt" "$tmp/got" >"$tmp/diff" ||
	fail "ctc differs from the H200's: $(cat "$tmp/diff")"
grep -qx "large 2324992 9600512 16632320" "$tmp/err" ||
	fail "large: $(grep '^large ' "$tmp/err")"
if $MEMSIM record --fake -o "$tmp/cudnn.csv" -- "$PY" \
	"$SRC/recorder/ctc_loss.py" cudnn >"$tmp/out" 2>"$tmp/err"; then
	fail "cuDNN's CTC recorded"
fi
grep -q "aten::_cudnn_ctc_loss has no fake (meta) kernel" "$tmp/err" ||
	fail "cudnn: $(tail -2 "$tmp/err")"
# torch.logsumexp (the blanks' term above): its meta kernel gives the
# output alone, and logsumexp_out_impl's max, the input minus it (input
# sized: 1 GiB for an 8 x 1024 x 32000 vocabulary's) and the sum were
# missing; the output of logsumexp.py on the H200, line for line.
$MEMSIM record --fake -o "$tmp/lse.csv" -- "$PY" "$SRC/recorder/logsumexp.py" \
	>"$tmp/out" 2>"$tmp/err" || fail "logsumexp: $(tail -3 "$tmp/err")"
grep '^lse ' "$tmp/err" >"$tmp/got"
diff "$DATA/logsumexp.h200.txt" "$tmp/got" >"$tmp/diff" ||
	fail "logsumexp differs from the H200's: $(cat "$tmp/diff")"
grep -q ',annotate,' "$tmp/lse.csv" && fail "logsumexp: an assumption"
finish recorder_ctc
