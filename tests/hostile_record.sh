#!/bin/sh
# memsim record under hostile use (issue 26): outputs checked before the
# script runs and never an input; the recorder's life is memsim's (a
# signal to memsim ends the recorder and all it started, --timeout ends a
# recording, nothing left running, nothing half-written); a child the
# script forks cannot touch the trace; the script's exit status, os._exit
# and a thread's exception in one line each; threads that allocate;
# command lines as users type them (python3 -u/-X/-W/-m, torchrun, many
# options).  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
in=$tmp/in # inputs: checked unmodified after every case
mkdir "$in" "$tmp/work"
cd "$tmp/work" || exit 1
sums() { (cd "$in" && find . -type f | sort | xargs -r cksum); }
mark=$tmp/ran # made by a script when it runs (os.open: never redirected)
export MARK="$mark"

# rcase RC PATTERN -- command: exit status RC, no hang, PATTERN on stderr
# (the last line), inputs unchanged, no folder of the recorder left.
rcase() {
	want=$1 pattern=$2; shift 3
	before=$(sums)
	rm -f "$mark"
	timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	desc="$*"
	[ "$rc" -eq "$want" ] ||
		fail "$desc: exit $rc, expected $want: $(tail -n 3 "$tmp/err")"
	if [ -n "$pattern" ] && ! tail -n 1 "$tmp/err" | grep -q -- "$pattern"; then
		fail "$desc: '$(tail -n 1 "$tmp/err")' lacks '$pattern'"
	fi
	[ "$(sums)" = "$before" ] || fail "$desc: modified an input"
	find "$tmp" -name '.memsim-record-*' | grep -q . &&
		fail "$desc: left the recorder's folder"
}
# before PATTERN -- command: fails with one line, before the script ran.
before() {
	rcase 1 "$@"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: not one line: $(cat "$tmp/err")"
	[ -e "$mark" ] && fail "$*: the script ran"
}
script() { f=$in/$1; shift; printf '%s\n' "$@" >"$f"; }
script ran.py 'import os, torch' \
	'os.close(os.open(os.environ["MARK"], os.O_CREAT | os.O_WRONLY))' \
	'x = torch.zeros(256, device="cuda")'
printf 'data\n' >"$in/data.txt"

# --- Outputs: checked before the script runs, never an input.
before 'folder nodir: No such file' -- $MEMSIM record -o nodir/t.csv -- "$PY" "$in/ran.py"
mkdir "$tmp/adir"
before 'is a folder' -- $MEMSIM record -o "$tmp/adir" -- "$PY" "$in/ran.py"
before "-o '': an empty file name" -- $MEMSIM record -o '' -- "$PY" "$in/ran.py"
before 'cannot write in folder /proc' -- $MEMSIM record -o /proc/t.csv -- "$PY" "$in/ran.py"
before 'a file the command reads' -- $MEMSIM record -o "$in/ran.py" -- "$PY" "$in/ran.py"
before 'a file the command reads' -- $MEMSIM record -o "$in/../in/data.txt" -- "$PY" "$in/ran.py" "$in/data.txt"
before 'not a regular file' -- $MEMSIM record -o /dev/null -- "$PY" "$in/ran.py"
mkfifo "$tmp/fifo"
before 'not a regular file' -- $MEMSIM record -o "$tmp/fifo" -- "$PY" "$in/ran.py"
[ -p "$tmp/fifo" ] || fail "the FIFO was replaced"
[ -c /dev/null ] || fail "/dev/null was replaced"
# A relative -o is where memsim was started, whatever the script's chdir.
mkdir "$tmp/elsewhere"
export ELSEWHERE="$tmp/elsewhere"
script chdir.py 'import os, torch' 'os.chdir(os.environ["ELSEWHERE"])' \
	'x = torch.zeros(8, device="cuda")'
rcase 0 '' -- $MEMSIM record -o rel.csv -- "$PY" "$in/chdir.py"
[ -s "$tmp/work/rel.csv" ] || fail "chdir: no rel.csv where memsim started"
[ -e "$tmp/elsewhere/rel.csv" ] && fail "chdir: the trace went to the script's folder"

# --- The script's end: exit status, os._exit, a thread's exception.
printf 'old\n' >"$tmp/work/keep.csv"
script exit3.py 'import sys, torch' 'x = torch.zeros(8, device="cuda")' 'sys.exit(3)'
rcase 3 'exit3.py exited with status 3; no trace written' -- \
	$MEMSIM record -o keep.csv -- "$PY" "$in/exit3.py"
[ "$(cat keep.csv)" = old ] || fail "a failed recording replaced the old trace"
script osexit0.py 'import os, torch' 'x = torch.zeros(8, device="cuda")' 'os._exit(0)'
rcase 0 '1 allocations' -- $MEMSIM record -o oe.csv -- "$PY" "$in/osexit0.py"
grep -q ',alloc,.*,32,' oe.csv || fail "os._exit(0): no trace of the script"
script osexit5.py 'import os, torch' 'x = torch.zeros(8, device="cuda")' 'os._exit(5)'
rcase 5 'osexit5.py called os._exit with status 5; no trace written' -- \
	$MEMSIM record -o keep.csv -- "$PY" "$in/osexit5.py"
script osexit_thr.py 'import os, threading, torch' 'x = torch.zeros(8, device="cuda")' \
	't = threading.Thread(target=lambda: os._exit(0), name="quitter")' 't.start()' 't.join()'
rcase 1 'called os._exit(0) from thread quitter at .*osexit_thr.py:3; no trace written' -- \
	$MEMSIM record -o keep.csv -- "$PY" "$in/osexit_thr.py"
[ "$(cat keep.csv)" = old ] || fail "os._exit from a thread replaced the old trace"
script sig.py 'import os, signal, torch' 'x = torch.zeros(8, device="cuda")' \
	'os.kill(os.getpid(), signal.SIGKILL)'
rcase 1 'killed by signal 9; no trace written' -- \
	$MEMSIM record -o keep.csv -- "$PY" "$in/sig.py"

# --- Threads: their allocations recorded on their own streams.
script thread.py 'import threading, torch' 'out = []' 'def work():' \
	'    s = torch.cuda.Stream()' '    with torch.cuda.stream(s):' \
	'        out.append(torch.zeros(1024, device="cuda"))' \
	'    out.append(torch.zeros(2048, device="cuda"))' \
	'x = torch.zeros(512, device="cuda")' \
	't = threading.Thread(target=work)' 't.start()' 't.join()' \
	'y = torch.zeros(256, device="cuda")'
rcase 0 '4 allocations' -- $MEMSIM record -o thr.csv -- "$PY" "$in/thread.py"
# the thread's own stream, then the default stream again (a new thread's
# current stream), the main thread's on stream 0 throughout
grep -q ',alloc,[0-9]*,2048,0,.*thread.py:8 <module>' thr.csv || fail "thread: main's first"
grep -q ',alloc,[0-9]*,4096,1,.*thread.py:6 work' thr.csv || fail "thread: on its stream"
grep -q ',alloc,[0-9]*,8192,0,.*thread.py:7 work' thr.csv || fail "thread: back on the default"
grep -q ',alloc,[0-9]*,1024,0,.*thread.py:12 <module>' thr.csv || fail "thread: main's last"
script thread_raise.py 'import threading, torch' 'def work():' \
	'    raise ValueError("boom")' 'x = torch.zeros(8, device="cuda")' \
	't = threading.Thread(target=work, name="w")' 't.start()' 't.join()'
rcase 1 'thread w raised ValueError: boom (at .*thread_raise.py:3); no trace written' -- \
	$MEMSIM record -o keep.csv -- "$PY" "$in/thread_raise.py"

# --- A child forked by the script cannot touch the trace: it is killed
# with the recording, and the trace is memsim's to publish.
script fork.py 'import os, time, torch' 'x = torch.zeros(8, device="cuda")' \
	'if os.fork() == 0:' '    time.sleep(2)' '    y = torch.zeros(4096, device="cuda")'
rcase 0 '1 allocations' -- $MEMSIM record -o fork.csv -- "$PY" "$in/fork.py"
cp fork.csv "$tmp/fork.first"
sleep 3
cmp -s fork.csv "$tmp/fork.first" || fail "fork: the trace changed after record returned"
grep -q ',16384,' fork.csv && fail "fork: the child's allocation in the trace"

# --- The recorder's life is memsim's.
script slow.py 'import os, subprocess, sys, time, torch' \
	'x = torch.zeros(8, device="cuda")' \
	'subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "memsim-orphan-" + os.environ["TAG"]])' \
	'os.close(os.open(os.environ["MARK"], os.O_CREAT | os.O_WRONLY))' \
	'time.sleep(300)'
left() { procs | grep -c "memsim-orphan-$1$"; }
export TAG=timeout
t0=$(date +%s)
rcase 1 'ran past --timeout 3 s and was stopped; no trace written' -- \
	$MEMSIM record --timeout 3 -o keep.csv -- "$PY" "$in/slow.py"
[ $(($(date +%s) - t0)) -lt 60 ] || fail "--timeout 3: took $(($(date +%s) - t0)) s"
[ "$(left timeout)" -eq 0 ] || fail "--timeout: the script's child still runs"
[ "$(cat keep.csv)" = old ] || fail "--timeout replaced the old trace"
before '--timeout' -- $MEMSIM record --timeout 0 -o keep.csv -- "$PY" "$in/ran.py"
# (a background job of sh ignores SIGINT: env gives it back its default)
for sig in TERM HUP INT; do
	export TAG=$sig
	rm -f "$mark"
	env --default-signal=INT $MEMSIM record -o keep.csv -- "$PY" "$in/slow.py" \
		>"$tmp/out" 2>"$tmp/err" &
	pid=$!
	n=0
	while [ ! -e "$mark" ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done
	[ -e "$mark" ] || fail "SIG$sig: the script never started"
	kill -$sig $pid
	wait $pid
	rc=$?
	tail -n 1 "$tmp/err" | grep -q '^memsim: record: memsim got signal [0-9]*: the recording was stopped; no trace written$' ||
		fail "SIG$sig: $(tail -n 2 "$tmp/err")"
	[ "$rc" -gt 128 ] || fail "SIG$sig: exit $rc"
	sleep 1
	[ "$(left $sig)" -eq 0 ] || fail "SIG$sig: the script's child still runs"
	procs | grep -v grep | grep -q "$in/slow.py" && fail "SIG$sig: the recorder still runs"
	[ "$(cat keep.csv)" = old ] || fail "SIG$sig replaced the old trace"
done

# --- Command lines as users type them.
fakes=
for i in $(seq 40); do fakes="$fakes --fake"; done
rcase 0 '' -- $MEMSIM record $fakes -o many.csv -- "$PY" "$in/ran.py"
before "--world-size '0': expected a whole number of GPUs, at least 1" -- \
	$MEMSIM record --world-size 0 -o w.csv -- "$PY" "$in/ran.py"
before '--rank 2: must be below --world-size 2' -- \
	$MEMSIM record --world-size 2 --rank 2 -o w.csv -- "$PY" "$in/ran.py"
script argv.py 'import sys, torch' 'x = torch.zeros(8, device="cuda")' \
	'print("argv", sys.argv[1:], "stdout", type(sys.stdout.buffer).__name__, "dev", sys.flags.dev_mode, "W", sys.warnoptions)'
rcase 0 '' -- env -u PYTHONUNBUFFERED $MEMSIM record -o a.csv -- "$PY" -u -X dev -W ignore "$in/argv.py" --lr 3
grep -q "argv \['--lr', '3'\] stdout FileIO dev True W \[.*'ignore'\]" "$tmp/err" ||
	fail "python3 -u -X dev: $(grep argv "$tmp/err")"
mkdir -p "$tmp/work/pkg"
: >"$tmp/work/pkg/__init__.py"
cp "$in/argv.py" "$tmp/work/pkg/train.py"
rcase 0 '' -- $MEMSIM record -o m.csv -- "$PY" -m pkg.train --epochs 2
grep -q "argv \['--epochs', '2'\]" "$tmp/err" || fail "python3 -m: $(cat "$tmp/err")"
before "-c' is not supported" -- $MEMSIM record -o c.csv -- "$PY" -c 'print(1)'
before 'ignore PYTHONPATH' -- $MEMSIM record -o c.csv -- "$PY" -I "$in/ran.py"
rcase 2 "memsim record: -m nosuchpkg: no module named nosuchpkg" -- \
	$MEMSIM record -o c.csv -- "$PY" -m nosuchpkg
script ddp.py 'import torch, torch.distributed as dist' 'dist.init_process_group("nccl")' \
	'print("rank", dist.get_rank(), "of", dist.get_world_size())' \
	'x = torch.zeros(1024, device="cuda")' 'dist.all_reduce(x)'
rcase 0 '' -- $MEMSIM record --rank 3 -o d.csv -- "$PY" -m torch.distributed.run \
	--nnodes=2 --nproc_per_node 2 "$in/ddp.py"
grep -q '^rank 3 of 4$' "$tmp/err" || fail "torch.distributed.run: $(cat "$tmp/err")"
if [ -x "$(dirname "$PY")/torchrun" ]; then
	# the interpreter of torchrun's "#!" line
	rcase 0 '' -- env PATH="$(dirname "$PY"):$PATH" MEMSIM_PYTHON= \
		$MEMSIM record -o d.csv -- torchrun --standalone --nproc-per-node 8 "$in/ddp.py"
	grep -q '^rank 0 of 8$' "$tmp/err" || fail "torchrun: $(cat "$tmp/err")"
fi
before "memsim record needs a number of processes" -- \
	$MEMSIM record -o d.csv -- "$PY" -m torch.distributed.run --nproc-per-node gpu "$in/ddp.py"

# --- fit: its outputs checked first, a failing recording is a failure at
# its value (the search goes on), many options, a time limit.
script fitb.py 'import sys, torch' 'b = int(sys.argv[1])' \
	'if b == 4:' '    raise SystemExit("no batch of 4")' \
	'x = torch.zeros(b * 1048576, device="cuda")'
before "fit: --keep nodir/B-1.csv: folder nodir: No such file" -- \
	$MEMSIM fit --cap 30MiB --vary B=1..4 -k nodir -- "$PY" "$in/fitb.py" '{B}'
before "fit: --keep $in/data.txt/B-1.csv: $in/data.txt is not a folder" -- \
	$MEMSIM fit --cap 30MiB --vary B=1..4 -k "$in/data.txt" -- "$PY" "$in/fitb.py" '{B}'
rcase 0 '' -- $MEMSIM fit $fakes --cap 30MiB --vary B=1..4 -k "$tmp/adir" -- \
	"$PY" "$in/fitb.py" '{B}'
grep -q '^memsim: fit: recording B=4 failed (exit 1).*; counted as not fitting$' "$tmp/err" ||
	fail "fit: the failed recording: $(grep B=4 "$tmp/err")"
grep -q '^largest    B=3$' "$tmp/out" || fail "fit: $(cat "$tmp/out")"
grep -q '^failed     1 recording (each counted as not fitting; see above)$' "$tmp/out" ||
	fail "fit: the failures: $(cat "$tmp/out")"
ls "$tmp/adir" | grep -q '^B-3.csv$' || fail "fit -k: B-3.csv not kept"
script fitslow.py 'import sys, time, torch' 'b = int(sys.argv[1])' \
	'x = torch.zeros(1048576, device="cuda")' 'if b > 1:' '    time.sleep(300)'
rcase 0 '' -- $MEMSIM fit --timeout 20 --cap 30MiB --vary B=1..2 -- \
	"$PY" "$in/fitslow.py" '{B}'
grep -q 'recording B=2 failed (exit 1): the recording ran past --timeout 20 s' "$tmp/err" ||
	fail "fit --timeout: $(grep B=2 "$tmp/err")"
grep -q '^largest    B=1$' "$tmp/out" || fail "fit --timeout: $(cat "$tmp/out")"
# the same limit for a recording sweep: B=2 fails, B=1 is run and stored
rcase 1 'recording B=2 failed (memsim record exit 1); its settings are not run' -- \
	$MEMSIM sweep --timeout 20 --db "$tmp/slow.db" --grid B=1,2 -- \
	"$PY" "$in/fitslow.py" '{B}'
grep -q 'the recording ran past --timeout 20 s and was stopped' "$tmp/err" ||
	fail "sweep --timeout: $(cat "$tmp/err")"
grep -q ': 1 settings: 1 run' "$tmp/out" || fail "sweep --timeout: $(cat "$tmp/out")"
[ "$(procs | grep -c '[f]itslow.py 2$')" -eq 0 ] ||
	fail "sweep --timeout: the recording still runs"
before '--timeout: only over a command' -- \
	$MEMSIM sweep --timeout 5 --db "$tmp/slow.db" "$in/data.txt"

# --- A sweep's recordings are keyed by the script's bytes: edit it and
# it is recorded again.
script sw.py 'import sys, torch' 'x = torch.zeros(int(sys.argv[1]) * 1024, device="cuda")'
rcase 0 '' -- $MEMSIM sweep --db "$tmp/sw.db" --grid batch=2 -- "$PY" "$in/sw.py" '{batch}'
rcase 0 '' -- $MEMSIM sweep --db "$tmp/sw.db" --grid batch=2 -- "$PY" "$in/sw.py" '{batch}'
grep -q 'made before, reused' "$tmp/err" || fail "sweep: not reused: $(cat "$tmp/err")"
printf 'y = torch.zeros(4096, device="cuda")\n' >>"$in/sw.py"
rcase 0 '' -- $MEMSIM sweep --db "$tmp/sw.db" --grid batch=2 -- "$PY" "$in/sw.py" '{batch}'
grep -q 'made before, reused' "$tmp/err" && fail "sweep: the edited script's old recording reused"
grep -q 'recording 1/1 (batch=2): recording' "$tmp/err" || fail "sweep: $(cat "$tmp/err")"
finish hostile_record
