#!/bin/sh
# memsim record --fake: a model moved from the GPU to the host holds
# plain CPU Parameters and buffers (fake.py, Module._apply's _become).
# tests/recorder/host_params.py trains a Linear + BatchNorm1d a step on
# the GPU, then model.cpu(): the parameters stayed FakeTensors (a fake
# CPU tensor whose .data was the host copy), so a CPU-only op ran
# through the fake mode (quantize_per_tensor came back float32; a
# quantized output stopped the recording: "quantized nyi in meta
# tensors", kd-qat's torch.ao convert), and the optimizer, holding the
# old objects, kept their GPU blocks alive.  Now each parameter is the
# same object, a real host tensor with the values the recorder gives a
# host copy, and the same script run for real on the CPU prints the same
# lines.  Needs PyTorch; skips (77) without.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
script=${MSIM_TESTDATA:-tests/data}/../recorder/host_params.py
(cd "$tmp" && "$PY" "$script" cpu) >"$tmp/cpu.out" 2>"$tmp/cpu.err" ||
	{ fail "real CPU run: $(tail -3 "$tmp/cpu.err")"; finish recorder_hostparams.sh; }
(cd "$tmp" && $MEMSIM record -o "$tmp/h.csv" -- "$PY" "$script" cuda) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
grep -v '^memsim record: ' "$tmp/err" >"$tmp/out"
# every line the real run prints, in order: the same objects, real host
# tensors after cpu(), quantize and numpy on a parameter, a real
# state_dict saved and loaded back equal, a forward on the host, the
# model back on the GPU stepped by the optimizer made before the moves
# (its state for all 4 parameters on the GPU), and torch.ao's eager QAT
# convert (fuse, prepare_qat, a step on the GPU, .cpu(), convert) with a
# quantized forward on the host
grep -v '^mem freed' "$tmp/out" | cmp -s - "$tmp/cpu.out" ||
	fail "lines differ from the real CPU run: $(diff "$tmp/cpu.out" "$tmp/out" | head -8)"
# cpu() frees the GPU copies of the 4 parameters (Linear(64, 32): 8192 +
# 128 bytes, BatchNorm1d(32): 128 + 128), of their 4 gradients and of
# the 3 buffers (128 + 128 + 8); Adam's state stays on the GPU, as the
# optimizer's state does in the real run.  Before: only the buffers'.
# memory_allocated() counts the caching allocator's blocks (round_size:
# 512 bytes at least), as on the GPU.
want=$(( 2 * (8192 + 512 + 512 + 512) + 512 + 512 + 512 ))
grep -qx "mem freed by cpu() $want" "$tmp/out" ||
	fail "GPU bytes freed by cpu(): $(grep '^mem freed' "$tmp/out"), want $want"
$MEMSIM run "$tmp/h.csv" >/dev/null || fail "memsim run"
finish recorder_hostparams.sh
