#!/bin/sh
# memsim record --fake, data pointers of fake host tensors: a model built
# on the CPU under --fake has meta storages, whose data_ptr PyTorch makes
# 0, so safetensors' load_model (and save_model, transformers'
# id_tensor_storage) could not tell tied weights shared: the load of a
# checkpoint saved for real without the tied copy (nanoVLM's
# from_pretrained: decoder.head.weight tied to token_embedding.weight)
# failed with a missing key.  Now a fake host storage has an address of
# its own, shared by its views and tied parameters, disjoint from the
# others', as on a real CPU.  Skips (77) without PyTorch or safetensors.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c "import safetensors" 2>/dev/null || exit 77
cat >"$tmp/tied.py" <<'PY'
import sys
import torch
import torch.nn as nn
from safetensors.torch import load_model, save_model


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16)
        self.head = nn.Linear(16, 100, bias=False)
        self.head.weight = self.emb.weight
        self.other = nn.Linear(16, 16)


if sys.argv[1] == "save":
    save_model(M(), "m.safetensors")
    sys.exit(0)
m = M()
e, h = m.emb.weight, m.head.weight
assert e.untyped_storage().data_ptr() == h.untyped_storage().data_ptr() != 0
assert e.data_ptr() == h.data_ptr() == e.untyped_storage().data_ptr()
assert e[1].data_ptr() == e.data_ptr() + 16 * 4
w, b = m.other.weight, m.other.bias
assert len({e.data_ptr(), w.data_ptr(), b.data_ptr()}) == 3
assert b.data_ptr() >= w.data_ptr() + 16 * 16 * 4 or w.data_ptr() >= b.data_ptr() + 16 * 4
load_model(m, "m.safetensors")
m.cuda()
PY
(cd "$tmp" && "$PY" tied.py save) 2>"$tmp/err" >&2 || fail "save: $(tail -3 "$tmp/err")"
(cd "$tmp" && $MEMSIM record --fake -o t.csv -- "$PY" tied.py load) 2>"$tmp/err" >&2 ||
	fail "record: $(tail -3 "$tmp/err")"
# the .cuda(): the tied weight once, the other Linear's weight and bias
got=$(awk -F, '$3 == "alloc" { printf "%s ", $5 }' "$tmp/t.csv")
[ "$got" = "6400 1024 64 " ] || fail "allocations: $got"
finish recorder_host_tied
