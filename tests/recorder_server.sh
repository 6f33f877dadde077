#!/bin/sh
# Start once, record many (lab/recserver.h): memsim fit and memsim sweep
# record through the recorder's fork server, several values at once with
# -j; the traces equal byte for byte those of separate recordings
# (MEMSIM_RECORD_SERVER=0), an HF model from a config (transformers
# imported before the recorder patches PyTorch) and a plain one; no
# process is left when memsim is killed or gets SIGTERM, nor after
# --timeout.  First fit's curve and --plot,
# on committed traces (no PyTorch).  Needs Python 3 and PyTorch for the
# rest; skips (77) without them.  No downloaded weights.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
DATA=${MSIM_TESTDATA:-tests/data}/record

# The curve fit learned: one row a value tried, in order, the answer
# marked; the real runs say 21 ran on the device and 22 did not.
$MEMSIM fit --cap 6442450944 --vary B=10..22 -c expandable_segments:True \
	--traces "$DATA/gptfit-{B}.bin" >"$tmp/fit" 2>/dev/null || fail "fit"
n=$(sed -n 's/^recordings \([0-9]*\)$/\1/p' "$tmp/fit")
rows=$(awk '/^curve/ { on = 1; next } on && /^ / { n++ } !/^ / { on = 0 }
	END { print n + 0 }' "$tmp/fit")
[ -n "$n" ] && [ "$rows" -eq "$n" ] || fail "curve: $rows rows, $n recordings"
grep -Eq '^ +21 .* fits: the answer$' "$tmp/fit" || fail "curve: $(cat "$tmp/fit")"
grep -Eq '^ +22 .* out of memory$' "$tmp/fit" || fail "curve: no 22"
grep -q '^largest *B=21$' "$tmp/fit" || fail "fit: $(cat "$tmp/fit")"
# Each row's needs: the peaks of the trace replayed without a cap.
$MEMSIM run --json "$DATA/gptfit-22.bin" >"$tmp/22.json" || fail "run 22"
r=$(key reserved_bytes.all.peak "$tmp/22.json")
g=$(awk -v r="$r" 'BEGIN { printf "%.2f GiB", r / 1073741824 }')
grep -Eq "^ +22 +$g " "$tmp/fit" || fail "curve: 22 needs $g: $(cat "$tmp/fit")"
if command -v gnuplot >/dev/null 2>&1; then
	$MEMSIM fit --cap 6442450944 --vary B=10..22 -c expandable_segments:True \
		--traces "$DATA/gptfit-{B}.bin" --plot "$tmp/fit.png" \
		>/dev/null 2>&1 || fail "fit --plot"
	[ -s "$tmp/fit.png" ] || fail "fit --plot: no figure"
	expect_error "--plot" $MEMSIM fit --cap 6442450944 --vary B=10..22 \
		--traces "$DATA/gptfit-{B}.bin" -c expandable_segments:True \
		--plot "$tmp/fit.txt"
fi

need_torch

# An HF Llama from a config and a plain model, each a step at batch B.
cat >"$tmp/hf.py" <<'PY'
import sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
b = int(sys.argv[1])
cfg = LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=1000)
model = LlamaForCausalLM(cfg).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ids = torch.randint(0, 1000, (b, 128), device="cuda")
model(input_ids=ids, labels=ids).loss.backward()
opt.step()
PY
cat >"$tmp/mlp.py" <<'PY'
import sys, torch
from torch import nn
b = int(sys.argv[1])
model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)).cuda()
opt = torch.optim.Adam(model.parameters())
for _ in range(2):
    model(torch.randn(b, 256, 512, device="cuda")).sum().backward()
    opt.step()
    opt.zero_grad()
PY

# fit: the same answer and the same traces, server (-j2) or not; the HF
# model where transformers is installed (CI installs it; build-aux's
# set-up does not), the sweep below on it or else on the plain model.
models=mlp sweepm=mlp
if "$PY" -c 'import transformers' 2>/dev/null; then
	models="hf mlp" sweepm=hf
else
	echo "no transformers: the HF model's part skipped"
fi
for s in $models; do
	mkdir "$tmp/$s-srv" "$tmp/$s-one"
	$MEMSIM fit -j2 --cap 1GiB --vary B=1..300 -c expandable_segments:True \
		-k "$tmp/$s-srv" -- "$PY" "$tmp/$s.py" '{B}' >"$tmp/$s-srv.out" \
		2>"$tmp/err" || fail "$s: fit: $(tail -3 "$tmp/err")"
	MEMSIM_RECORD_SERVER=0 $MEMSIM fit --cap 1GiB --vary B=1..300 \
		-c expandable_segments:True -k "$tmp/$s-one" -- "$PY" \
		"$tmp/$s.py" '{B}' >"$tmp/$s-one.out" 2>"$tmp/err" ||
		fail "$s: fit alone: $(tail -3 "$tmp/err")"
	grep '^largest' "$tmp/$s-srv.out" >"$tmp/a"
	grep '^largest' "$tmp/$s-one.out" >"$tmp/b"
	[ -s "$tmp/a" ] && cmp -s "$tmp/a" "$tmp/b" ||
		fail "$s: answers differ: $(cat "$tmp/a" "$tmp/b")"
	n=0
	for f in "$tmp/$s-srv"/*.csv; do
		[ -f "$f" ] || continue
		one=$tmp/$s-one/$(basename "$f")
		[ -f "$one" ] || continue
		n=$((n + 1))
		cmp -s "$f" "$one" || fail "$s: $(basename "$f") differs"
	done
	[ "$n" -ge 3 ] || fail "$s: $n traces to compare"
done

# sweep: three recordings at once, the same traces as one by one.
$MEMSIM sweep -j3 --db "$tmp/srv.db" --grid B=1,2,3 -- "$PY" "$tmp/$sweepm.py" \
	'{B}' >/dev/null 2>"$tmp/err" || fail "sweep -j3: $(tail -3 "$tmp/err")"
MEMSIM_RECORD_SERVER=0 $MEMSIM sweep -j1 --db "$tmp/one.db" --grid B=1,2,3 \
	-- "$PY" "$tmp/$sweepm.py" '{B}' >/dev/null 2>"$tmp/err" ||
	fail "sweep alone: $(tail -3 "$tmp/err")"
n=0
for f in "$tmp/srv.db.recordings"/*.csv; do
	n=$((n + 1))
	cmp -s "$f" "$tmp/one.db.recordings/$(basename "$f")" ||
		fail "sweep: $(basename "$f") differs"
done
[ "$n" -eq 3 ] || fail "sweep: $n recordings"

# A recording that fails among several at once: named, a failure at its
# value (counted as not fitting, the search goes on), no scratch folder
# left (sweeprec.sh has one at a time).
cat >"$tmp/fail3.py" <<'PY'
import sys, torch
b = int(sys.argv[1])
x = torch.empty(b, 1024, device="cuda")
sys.exit(3 if b == 3 else 0)
PY
$MEMSIM fit -j2 --cap 1GiB --vary B=2..3 -- "$PY" "$tmp/fail3.py" '{B}' \
	>"$tmp/out" 2>"$tmp/err" || fail "fit over a failing recording: $(cat "$tmp/err")"
grep -q '^memsim: fit: recording B=3 failed (exit 3); counted as not fitting$' "$tmp/err" ||
	fail "fit -j2, B=3 fails: $(cat "$tmp/err")"
grep -q '^largest *B=2$' "$tmp/out" || fail "fit -j2, B=3 fails: $(cat "$tmp/out")"
grep -Eq '^ +3 +- +- +recording failed$' "$tmp/out" ||
	fail "fit -j2: the curve: $(cat "$tmp/out")"
left=$(ls -A "$TMPDIR" | grep '^memsim-')
[ -z "$left" ] || fail "scratch left in TMPDIR: $left"

# Processes whose command line has $1; waits (up to 300 s) until there
# are two, or (up to 10 s) until there are none.
running() { procs | grep -F "$1" | grep -v grep; }
until_two() {
	i=0
	while [ $i -lt 600 ] && [ "$(running "$1" | wc -l)" -lt 2 ]; do
		sleep 0.5; i=$((i + 1))
	done
	[ "$(running "$1" | wc -l)" -ge 2 ]
}
until_none() {
	i=0
	while [ $i -lt 20 ] && [ -n "$(running "$1")" ]; do
		sleep 0.5; i=$((i + 1))
	done
	[ -z "$(running "$1")" ]
}

# --timeout through the server: the recording past it (and the process
# it started) killed, a failure at its value; nothing left running, no
# private folder left beside the kept traces.
cat >"$tmp/slow.py" <<'PY'
import subprocess, sys, time, torch
x = torch.empty(int(sys.argv[1]), device="cuda")
if int(sys.argv[1]) > 2:
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)",
                      "slow-child-" + sys.argv[2]])
    time.sleep(300)
PY
mkdir "$tmp/keep-t"
$MEMSIM fit -j2 --timeout 15 --cap 1GiB --vary B=2..3 -k "$tmp/keep-t" -- \
	"$PY" "$tmp/slow.py" '{B}' "$$" >"$tmp/out" 2>"$tmp/err" ||
	fail "fit --timeout (server): $(cat "$tmp/err")"
grep -q '^memsim: fit: recording B=3 failed (exit 1): the recording ran past --timeout 15 s and was stopped; no trace written; counted as not fitting$' "$tmp/err" ||
	fail "fit --timeout (server): $(cat "$tmp/err")"
grep -q '^largest *B=2$' "$tmp/out" || fail "fit --timeout (server): $(cat "$tmp/out")"
[ "$(ls -A "$tmp/keep-t")" = "B-2.csv" ] ||
	fail "fit --timeout (server): left in -k: $(ls -A "$tmp/keep-t")"
until_none "slow-child-$$" ||
	fail "fit --timeout (server): the script's child left running"
until_none "$tmp/slow.py" ||
	fail "fit --timeout (server): a recording left running"

# memsim killed while the server records: nothing left running.
cat >"$tmp/sleepy.py" <<'PY'
import sys, time, torch
x = torch.empty(int(sys.argv[1]), device="cuda")
time.sleep(120)
PY
$MEMSIM fit -j2 --cap 1GiB --vary B=1..9 -- "$PY" "$tmp/sleepy.py" '{B}' \
	>/dev/null 2>&1 &
pid=$!
until_two "$tmp/sleepy.py" || fail "kill: the recordings never ran"
kill -9 $pid
wait $pid 2>/dev/null
until_none "$tmp/sleepy.py" ||
	fail "left running after memsim was killed: $(running "$tmp/sleepy.py")"

# SIGTERM to memsim while the server records: passed on, every recording
# and what it started killed, memsim exits 128+15 saying so.
cat >"$tmp/sleepy2.py" <<'PY'
import subprocess, sys, time, torch
x = torch.empty(int(sys.argv[1]), device="cuda")
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)",
                  "sleepy-child-" + sys.argv[2]])
time.sleep(120)
PY
$MEMSIM fit -j2 --cap 1GiB --vary B=1..9 -- "$PY" "$tmp/sleepy2.py" '{B}' \
	"$$" >/dev/null 2>"$tmp/err" &
pid=$!
until_two "sleepy-child-$$" || fail "SIGTERM: the recordings never ran"
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] || fail "SIGTERM: exit $rc: $(cat "$tmp/err")"
grep -q 'memsim got signal 15' "$tmp/err" || fail "SIGTERM: $(cat "$tmp/err")"
until_none "sleepy-child-$$" ||
	fail "SIGTERM: left running: $(running "sleepy-child-$$")"
until_none "$tmp/sleepy2.py" || fail "SIGTERM: a recording left running"

finish recorder_server.sh
