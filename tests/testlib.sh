# Sourced by shell tests (. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"):
# $MEMSIM, ./memsim unless given; $tmp, a folder removed at exit; a private
# TMPDIR inside it, so a scratch folder memsim leaves behind shows up
# there; fail, which counts; expect_error and key below; and finish NAME,
# the test's end.
MEMSIM=${MEMSIM:-./memsim}
tmp=$(mktemp -d /tmp/memsim-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
TMPDIR=$tmp/scratch
export TMPDIR
mkdir "$TMPDIR"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
finish() {
	[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
	echo "$1: all passed"
}

# expect_error PATTERN COMMAND...: COMMAND fails, with one line on stderr
# (the cause) that holds PATTERN.
expect_error() {
	pattern=$1; shift
	if "$@" >"$tmp/out" 2>"$tmp/err"; then
		fail "$* succeeded"; return
	fi
	lines=$(wc -l <"$tmp/err")
	grep -q -- "$pattern" "$tmp/err" || fail "$*: '$(cat "$tmp/err")' lacks '$pattern'"
	[ "$lines" -eq 1 ] || fail "$*: $lines lines on stderr"
}

# procs: the command line of every process, one a line, arguments
# joined by spaces (from /proc, so that no ps is needed: CI's machine has
# none, and a check of what is left running must not pass for want of it).
procs() {
	for f in /proc/[0-9]*/cmdline; do
		{ tr '\0' ' ' <"$f"; } 2>/dev/null && echo
	done | sed 's/ $//; /^$/d'
}

# key NAME FILE: the integer "NAME" of a JSON file (memsim run --json).
key() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$2"; }

# run_peaks FILE [OPTIONS]: "allocated reserved", the peaks of memsim run
# --json OPTIONS FILE ("run failed" where it fails).
run_peaks() {
	f=$1; shift
	$MEMSIM run --json "$@" "$f" >"$tmp/run.json" || { echo "run failed"; return; }
	echo "$(key allocated_bytes.all.peak "$tmp/run.json") $(key reserved_bytes.all.peak "$tmp/run.json")"
}

# real_and_fake W ALLOC RES: the recordings of one workload in $DATA.
# W.real.bin (memsim record --gpu) must replay to the peaks torch reported,
# ALLOC and RES (torch.cuda.max_memory_allocated, _reserved); fa and fr
# are set to the peaks W.fake.csv (memsim record --fake) replays to, for
# the caller to hold against them.  Returns 1 when a run fails.
real_and_fake() {
	$MEMSIM run --json "$DATA/$1.real.bin" >"$tmp/real.json" ||
		{ fail "$1: run real"; return 1; }
	[ "$(key allocated_bytes.all.peak "$tmp/real.json")" = "$2" ] ||
		fail "$1: real trace peak allocated"
	[ "$(key reserved_bytes.all.peak "$tmp/real.json")" = "$3" ] ||
		fail "$1: real trace peak reserved"
	$MEMSIM run --json "$DATA/$1.fake.csv" >"$tmp/fake.json" ||
		{ fail "$1: run fake"; return 1; }
	fa=$(key allocated_bytes.all.peak "$tmp/fake.json")
	fr=$(key reserved_bytes.all.peak "$tmp/fake.json")
}

# need_torch: $PY (MEMSIM_PYTHON, else python3), or skip (77) the test
# when it cannot import torch.  TORCH_TESTS="NAME..." (test names without
# .sh) runs only those of the tests that need PyTorch and skips the
# others: .ci/run's sanitizer build and distcheck run a few of them, the
# normal build all.
need_torch() {
	if [ -n "${TORCH_TESTS:-}" ]; then
		case " $TORCH_TESTS " in
		*" $(basename "$0" .sh) "*) ;;
		*) echo "not in TORCH_TESTS: skipped"; exit 77 ;;
		esac
	fi
	PY=${MEMSIM_PYTHON:-python3}
	"$PY" -c 'import torch' 2>/dev/null || { echo "no PyTorch: skipped"; exit 77; }
}

# same_as_cpu SCRIPT [TOL]: SCRIPT (a file in $tmp that runs on $DEV,
# "cuda" when unset) recorded with --fake --values cpu prints exactly what
# its plain CPU run (DEV=cpu) prints, with no assumption; with TOL, each
# number within TOL of the CPU's, relatively (values computed by other
# kernels than the CPU's own, which round otherwise); the recording is
# $tmp/SCRIPT's name.csv and its output $tmp/out.
same_as_cpu() {
	(cd "$tmp" && DEV=cpu "$PY" "$1") >"$tmp/want" 2>&1 ||
		fail "cpu run: $(tail -3 "$tmp/want")"
	(cd "$tmp" && $MEMSIM record --fake --values cpu \
		-o "$tmp/${1%.py}.csv" -- "$PY" "$1") >"$tmp/out" 2>&1 ||
		fail "record: $(tail -3 "$tmp/out")"
	grep -v '^memsim record' "$tmp/out" >"$tmp/got"
	if [ $# -gt 1 ]; then
		"$PY" - "$tmp/want" "$tmp/got" "$2" <<'PY' ||
import sys
want, got = (open(f).read().split() for f in sys.argv[1:3])
tol = float(sys.argv[3])


def close(a, b):
    try:
        x, y = float(a), float(b)
    except ValueError:
        return a == b
    return abs(x - y) <= tol * max(abs(x), abs(y), 1e-30)


sys.exit(len(want) != len(got) or
         not all(close(a, b) for a, b in zip(want, got)))
PY
			fail "values (within $2): $(diff "$tmp/want" "$tmp/got")"
	else
		cmp -s "$tmp/want" "$tmp/got" ||
			fail "values: $(diff "$tmp/want" "$tmp/got")"
	fi
	grep -q "; 0 assumptions$" "$tmp/out" ||
		fail "assumptions: $(tail -1 "$tmp/out")"
}

# copies_seq CSV: a recording's allocations, each one's size in order,
# "c" after one whose site names a contiguous copy (a kernel's
# `.contiguous()` of its input) and " -" where that copy is freed.
copies_seq() {
	awk -F, '$3 == "alloc" { printf "%s%s", s, $5; s = " " }
		$3 == "alloc" && $8 ~ /contiguous/ { c[$4] = 1; printf "c" }
		$3 == "free_completed" && ($4 in c) { printf " -"; delete c[$4] }
		END { print "" }' "$1"
}
