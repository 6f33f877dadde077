#!/bin/sh
# torch.load(f, map_location="cuda") inside a function: the checkpoint's
# CUDA tensors are freed when the function returns and its dict goes, as
# on the GPU.  openai/whisper's load_model loads its checkpoint to the GPU,
# loads it into a model built on the host and returns model.to(device):
# the recording kept the checkpoint's storages to the end (host._Load's
# map of the storages it made, which outlived the load), 151 MB of
# whisper-tiny's 322 MB peak (+45%).  Here a Linear(1024, 1024): 4 MiB
# and 4 KiB, twice while loading, once after.  Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cd "$tmp" || fail "no scratch folder"
"$PY" -c 'import torch
torch.manual_seed(0)
torch.save({"model_state_dict": torch.nn.Linear(1024, 1024).state_dict()}, "ck.pt")' ||
	fail "could not write the checkpoint"
cat >"$tmp/ld.py" <<'PY'
import torch


def load_model(path, device):
    with open(path, "rb") as fp:
        checkpoint = torch.load(fp, map_location=device)
    model = torch.nn.Linear(1024, 1024)
    model.load_state_dict(checkpoint["model_state_dict"])
    print("loading", torch.cuda.memory_allocated())
    return model.to(device)


m = load_model("ck.pt", "cuda")
print("loaded", torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated())
PY
for values in rules cpu; do
	$MEMSIM record --fake --values $values -o "$tmp/ld.csv" -- "$PY" \
		"$tmp/ld.py" >"$tmp/err" 2>&1 ||
		fail "record --values $values: $(grep -v '^memsim record: ' "$tmp/err" | tail -2)"
	grep -v '^memsim record' "$tmp/err" >"$tmp/printed"
	printf 'loading 4198400\nloaded 4198400 8396800\n' >"$tmp/want"
	cmp -s "$tmp/printed" "$tmp/want" ||
		fail "--values $values printed: $(cat "$tmp/printed")"
done
finish recorder_load_scope.sh
