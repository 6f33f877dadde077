#!/bin/sh
# memsim record --fake: the legacy sparse types of torch.cuda.sparse
# (FloatTensor, LongTensor...) where no GPU is: a CPU build's refuse to
# construct ("type torch.cuda.sparse.FloatTensor not available. Torch not
# compiled with CUDA enabled"): GPyTorch's grid interpolation
# (linear_operator's make_sparse_from_indices_and_values:
# getattr(torch.cuda.sparse, "FloatTensor")(indices, values, size)) in its
# KISS-GP and LOVE notebooks.  Each is a class whose call is
# legacy_sparse_tensor_generic_ctor_new's: (indices, values, size) makes
# the sparse tensor of the two (_sparse_coo_tensor_with_dims_and_tensors,
# nothing allocated, the indices not checked), sizes an empty one;
# isinstance() tests device, dtype and layout.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
i = torch.stack([torch.arange(6, device="cuda") % 3,
                 torch.arange(6, device="cuda") % 4])
v = torch.randn(6, device="cuda")
cls = getattr(torch.cuda.sparse, v.type().split(".")[-1])
S = cls(i, v, torch.Size([3, 4]))
print("sparse", S.is_sparse, S.device, tuple(S.shape), S.dtype,
      isinstance(S, torch.cuda.sparse.FloatTensor),
      isinstance(v, torch.cuda.sparse.FloatTensor))
print("mm", tuple(torch.sparse.mm(S, torch.randn(4, 5, device="cuda")).shape))
E = torch.cuda.sparse.DoubleTensor(3, 4)
print("empty", E.is_sparse, tuple(E.shape), E.dtype, E._nnz())
PY
(cd "$tmp" && PYTHONUNBUFFERED=1 $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "sparse True cuda:0 (3, 4) torch.float32 True False" "mm (3, 5)" \
	"empty True (3, 4) torch.float64 0"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
finish recorder_legacy_sparse.sh
