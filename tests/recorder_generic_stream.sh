#!/bin/sh
# memsim record --fake: torch.Stream() and torch.Event(), the
# device-generic ones, on the current accelerator (CUDA under the
# recorder) are CUDA streams and events: a block allocated inside
# `with torch.Stream():` comes from that stream's pool, as on the GPU
# (transformers' OffloadedCache prefetches on one: accelerate's
# inference/distributed/phi2.py with an offloaded cache, 3 streams of 2
# MiB on the H100, reserved -9.4% before, exact after).  Before, the
# native constructor made a stream numbered 0 and entering it changed
# nothing.  A CPU stream stays PyTorch's; a CUDA stream's device is
# cuda:0 (it was None).  The script on the H100 prints the same line and
# allocates the two blocks on side streams.  Needs Python 3 and PyTorch;
# skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/s.py" <<'PY'
import torch
x = torch.randn(1024, 1024, device="cuda")
s = torch.Stream()
e = torch.Event()
with s:
    y = torch.empty(4 << 20, device="cuda")
    e.record()
torch.cuda.current_stream().wait_stream(s)
s2 = torch.Stream(device="cuda", priority=-1)
with s2:
    z = torch.empty(1 << 20, device="cuda")
print(isinstance(s, torch.Stream), isinstance(torch.cuda.Stream(), torch.Stream),
      isinstance(e, torch.Event), s == s2,
      torch.Stream(device="cpu").device_type == 0, s.device,
      torch.cuda.current_stream().device)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/s.csv" -- "$PY" s.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -qx "True True True False True cuda:0 cuda:0" "$tmp/out" ||
	fail "isinstance and equality: $(head -3 "$tmp/out")"
got=$(awk -F, '$3 == "alloc" { printf "%s:%s ", $5, $6 }' "$tmp/s.csv")
[ "$got" = "4194304:0 16777216:1 4194304:2 " ] ||
	fail "allocations (size:stream): '$got', expected '4194304:0 16777216:1 4194304:2 '"
finish recorder_generic_stream.sh
