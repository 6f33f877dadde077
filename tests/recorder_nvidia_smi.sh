#!/bin/sh
# A recorded script that runs `nvidia-smi` finds one: the recording
# pretends a GPU (torch.cuda.is_available(), the --device's name and
# memory), and a script that logs the machine as modded-nanogpt's records
# do (`subprocess.run(['nvidia-smi'], stdout=PIPE, ...)` right after
# init_process_group) stopped with FileNotFoundError on a machine with no
# NVIDIA driver.  The recorder puts a stand-in first on the script's PATH
# that describes the --device as nvidia-smi would: the table, -L, and
# --query-gpu=FIELDS --format=csv[,noheader][,nounits].  The same on a
# machine with a GPU (the recorded device, not the machine's).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/t.py" <<'PY'
import subprocess, torch
r = subprocess.run(['nvidia-smi'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
print("table", r.returncode, torch.cuda.get_device_name(0) in r.stdout)
q = subprocess.check_output(["nvidia-smi", "--query-gpu=name,memory.total",
                             "--format=csv,noheader,nounits"], text=True)
print("query", q.strip())
print("list", subprocess.check_output("nvidia-smi -L", shell=True, text=True).split(" (")[0])
torch.zeros(4, device="cuda")
PY
(cd "$tmp" && $MEMSIM record --fake --device h100-80gb -o "$tmp/t.csv" -- \
	"$PY" t.py) >"$tmp/err" 2>&1 || fail "nvidia-smi: $(tail -3 "$tmp/err")"
grep -qxF "table 0 True" "$tmp/err" || fail "table: $(cat "$tmp/err")"
# 85031714816 bytes: 81092 MiB
grep -qxF "query NVIDIA H100 80GB HBM3, 81092" "$tmp/err" || fail "query: $(cat "$tmp/err")"
grep -qxF "list GPU 0: NVIDIA H100 80GB HBM3" "$tmp/err" || fail "list: $(cat "$tmp/err")"
finish nvidia_smi
