#!/bin/sh
# libmemsim as its users see it (lib/memsim.h): the shared library exports
# memsim_* and nothing else, under a versioned soname; memsim links it;
# tests/api_run, written against memsim.h alone, prints the figures
# `memsim run --json` prints for the same setting, stores the same row,
# and gets every error of the contract with its code and message.  Run by
# `make check` with MEMSIM and MSIM_TESTDATA.
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}
top=$(dirname "$MEMSIM")
API=$top/tests/api_run
SO=$top/.libs/libmemsim.so
tmp=$(mktemp -d /tmp/memsim-api-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. Exports: the memsim_* functions of memsim.h, each, and nothing else.
[ -f "$SO" ] || { echo "SKIP: no shared library (--disable-shared)"; exit 77; }
command -v nm >/dev/null 2>&1 || { echo "SKIP: no nm"; exit 77; }
nm -D --defined-only "$SO" | awk '{print $NF}' | sort >"$tmp/exports"
[ -s "$tmp/exports" ] || fail "nm -D found no symbols in $SO"
grep -v '^memsim_' "$tmp/exports" >"$tmp/others" &&
	fail "exported beyond memsim_*: $(tr '\n' ' ' <"$tmp/others")"
srcdir=${srcdir:-$top}
sed -n 's/^MEMSIM_EXPORT [^(]*[ *]\(memsim_[a-z_]*\)(.*/\1/p' \
	"$srcdir/lib/memsim.h" | sort >"$tmp/declared"
[ "$(wc -l <"$tmp/declared")" -ge 15 ] || fail "memsim.h: declarations not found"
diff "$tmp/declared" "$tmp/exports" >"$tmp/diff" ||
	fail "memsim.h and the exports differ: $(cat "$tmp/diff")"
if command -v objdump >/dev/null 2>&1; then
	objdump -p "$SO" | grep -q 'SONAME *libmemsim\.so\.[0-9]' ||
		fail "no versioned soname: $(objdump -p "$SO" | grep SONAME)"
	prog=$top/.libs/memsim
	[ -f "$prog" ] || prog=$MEMSIM
	objdump -p "$prog" | grep -q 'NEEDED *libmemsim\.so\.' ||
		fail "memsim does not link the shared libmemsim"
fi

# 2. The contract's errors (api_run --check asserts each code).
"$API" --check "$DATA/traces/gpt2_varlen.csv" >"$tmp/check" 2>&1 ||
	fail "api_run --check: $(cat "$tmp/check")"
grep -q '^EPARAMS alloc_conf: .*max_split_size_mb' "$tmp/check" ||
	fail "EPARAMS message: $(grep EPARAMS "$tmp/check")"
grep -q '^missing .*: .*/nonexistent/trace.csv' "$tmp/check" ||
	fail "missing trace message: $(grep missing "$tmp/check")"

# 2b. The experiments' calls give the commands' answers: memsim_fit() the
# largest of `memsim fit --traces`, memsim_tune() the recommendation of
# `memsim tune` (the same search, stored alike); memsim_record() says why
# an interpreter cannot run, and checks its output first.
MEMSIM_PYTHONPATH=$srcdir/traces \
	"$API" --lab "$DATA/record/gptfit-{B}.bin" 10 22 6442450944 \
	"$DATA/traces/gpt2_varlen.csv" 16106127360 "$tmp/lab.db" \
	>"$tmp/lab" 2>&1 ||
	fail "api_run --lab: $(cat "$tmp/lab")"
"$MEMSIM" fit --cap 6442450944 --vary B=10..22 \
	--traces "$DATA/record/gptfit-{B}.bin" -c expandable_segments:True \
	>"$tmp/fit" 2>/dev/null || fail "memsim fit"
b=$(sed -n 's/^largest *B=\([0-9]*\).*/\1/p' "$tmp/fit")
grep -qx "fit $b" "$tmp/lab" || fail "memsim_fit: $(grep fit "$tmp/lab"), memsim fit: B=$b"
"$MEMSIM" tune --cap 16106127360 -j1 --db "$tmp/tune.db" \
	"$DATA/traces/gpt2_varlen.csv" >"$tmp/tune" || fail "memsim tune"
conf=$(sed -n 's/^export PYTORCH_CUDA_ALLOC_CONF="\(.*\)"$/\1/p' "$tmp/tune")
grep -qx "tune $conf" "$tmp/lab" ||
	fail "memsim_tune: $(grep tune "$tmp/lab"), memsim tune: $conf"
grep -q '^record 127 cannot run /nonexistent/python3: ' "$tmp/lab" ||
	fail "memsim_record: $(grep record "$tmp/lab")"
grep -q '^record-out -5 -o /nonexistent/out.csv: folder /nonexistent: No such file' "$tmp/lab" ||
	fail "memsim_record's output: $(grep record-out "$tmp/lab")"

# 3. The same figures as `memsim run --json`, key by key, in its order
# (wall_ms aside); numbers compared as numbers.
json_lines() {
	sed -n 's/^  "\([^"]*\)": "\{0,1\}\(.*\)$/\1 \2/p' | sed 's/",\{0,1\}$//; s/,$//' |
		grep -v '^wall_ms ' |
		awk '$2 ~ /^-?[0-9]+\.[0-9]*$/ && NF == 2 { printf "%s %.6f\n", $1, $2; next } { print }'
}
same() { # LABEL TRACE POLICY CONF [run options] -- [api options]
	label=$1 trace=$2 policy=$3 conf=$4; shift 4
	ropts= aopts=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do ropts="$ropts $1"; shift; done
	[ $# -gt 0 ] && shift
	aopts=$*
	# shellcheck disable=SC2086
	"$MEMSIM" run --json -p "$policy" -c "$conf" $ropts "$trace" \
		>"$tmp/run.json" 2>"$tmp/err" || { fail "$label: memsim run: $(cat "$tmp/err")"; return; }
	json_lines <"$tmp/run.json" >"$tmp/run.txt"
	# shellcheck disable=SC2086
	"$API" "$trace" "$policy" "$conf" $aopts >"$tmp/api.out" 2>"$tmp/err" ||
		{ fail "$label: api_run: $(cat "$tmp/err")"; return; }
	grep -v '^timeline \|^wall_ms ' "$tmp/api.out" | json_lines_api >"$tmp/api.txt"
	[ "$(wc -l <"$tmp/run.txt")" -gt 120 ] || fail "$label: run --json has $(wc -l <"$tmp/run.txt") keys"
	diff "$tmp/run.txt" "$tmp/api.txt" >"$tmp/diff" ||
		fail "$label: the API and run --json differ: $(head -20 "$tmp/diff")"
	grep -q '^timeline [1-9][0-9]* points' "$tmp/api.out" ||
		fail "$label: no timeline: $(grep timeline "$tmp/api.out")"
}
json_lines_api() {
	awk '$2 ~ /^-?[0-9]+\.[0-9]*$/ && NF == 2 { printf "%s %.6f\n", $1, $2; next } { print }'
}
same gpt2_varlen "$DATA/traces/gpt2_varlen.csv" pytorch ""
same "max_split_size under a cap" "$DATA/traces/gpt2_varlen.csv" pytorch \
	"max_split_size_mb:128,garbage_collection_threshold:0.6" \
	--cap 3GiB --keep-going -- cap=3GiB keep_going=1
same "bfc, a fraction" "$DATA/traces/resnet50_amp.csv" bfc "" \
	--fraction 0.05 -- fraction=0.05
same "a model spec" "model:arch=gpt2,batch=2,seq=128,steps=1" pytorch \
	"expandable_segments:True"
same "a snapshot, seeded" "$DATA/pickles/resnet50_amp.pickle" pytorch ""
same "a snapshot's recording" "$DATA/pickles/train_eval_emptycache.pickle" \
	pytorch "" --recording -- recording=1
same "requests only" "$DATA/traces/prefetch_2stream.csv" pytorch "" \
	--requests-only -- requests_only=1

# 4. Exact figures of a hand-made trace under PyTorch's rules: 1000 bytes
# round up to 1024 (round_size) in a 2 MiB small segment (kSmallBuffer);
# 3 MiB is a large block in a 20 MiB segment (kLargeBuffer, for requests
# under kMinLargeAlloc); both are freed, nothing is released.
printf 'seq,time_us,action,addr,size,stream\n0,1,alloc,4096,1000,0\n1,2,alloc,8192,3145728,0\n2,3,free_completed,4096,1000,0\n3,4,free_completed,8192,3145728,0\n' >"$tmp/small.csv"
"$API" "$tmp/small.csv" >"$tmp/small.out" 2>&1 || fail "small: $(cat "$tmp/small.out")"
for kv in "requests 4" "reserved_bytes.all.peak 23068672" \
	"reserved_bytes.all.current 23068672" "allocated_bytes.all.peak 3146752" \
	"allocated_bytes.all.current 0" "requested_bytes.all.peak 3146728" \
	"segment.all.peak 2" "num_device_alloc 2" "oom_request -1"; do
	grep -qx "$kv" "$tmp/small.out" ||
		fail "small: want '$kv', got '$(grep "^${kv% *} " "$tmp/small.out")'"
done

# 5. Stored as run --db stores it: the same setting, the same run id.
API_RUN_DB=$tmp/api.db "$API" "$tmp/small.csv" >"$tmp/stored" 2>&1 ||
	fail "store: $(cat "$tmp/stored")"
grep -qx 'run_id 1' "$tmp/stored" || fail "store: no run_id 1: $(grep run_id "$tmp/stored")"
"$MEMSIM" run --json --db "$tmp/api.db" "$tmp/small.csv" >"$tmp/stored.json" 2>&1 ||
	fail "run --db: $(cat "$tmp/stored.json")"
grep -q '"run_id": 1$' "$tmp/stored.json" ||
	fail "run --db did not find the API's row: $(grep run_id "$tmp/stored.json")"
if command -v sqlite3 >/dev/null 2>&1; then
	[ "$(sqlite3 "$tmp/api.db" 'SELECT count(*) FROM runs')" = 1 ] ||
		fail "store: $(sqlite3 "$tmp/api.db" 'SELECT count(*) FROM runs') runs"
fi
API_RUN_DB=/nonexistent/dir/x.db "$API" "$tmp/small.csv" >/dev/null 2>"$tmp/err" &&
	fail "store into a missing folder succeeded"
grep -q 'nonexistent' "$tmp/err" || fail "store error: $(cat "$tmp/err")"

[ $fails -eq 0 ] && echo "api: all passed"
exit $((fails > 0))
