#!/bin/sh
# memsim record --fake keeps the allocator settings the program runs with
# (traces/memsim_record/fake.py, Recorder.settings): PYTORCH_ALLOC_CONF
# (else PYTORCH_CUDA_ALLOC_CONF) as the caching allocator reads it when it
# starts, the script's own os.environ included (nanochat's and
# modded-nanogpt's training scripts set expandable_segments:True so), then
# torch.cuda.memory._set_allocator_settings() on top.  The trace's first
# row carries them (an annotate row, category allocator_settings) and
# `memsim run` replays with them, as with a snapshot's own settings; -c
# overrides them, --defaults drops them.  Before, the recording had none
# and replayed under the defaults.  Needs Python 3 and PyTorch; skips
# (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch

rec() { # NAME MODE [VAR=VALUE]: record allocconf.py MODE to $tmp/NAME.csv
	n=$1 m=$2; shift 2
	env "$@" $MEMSIM record -o "$tmp/$n.csv" -- "$PY" \
		"$SRC/recorder/allocconf.py" "$m" >"$tmp/$n.out" 2>"$tmp/$n.err" ||
		{ fail "record $n: $(tail -3 "$tmp/$n.err")"; return 1; }
}
first() { sed -n 2p "$1"; }

# 1. The script's own os.environ before torch: the first row, and the
# replay runs with it.  The H200 (PyTorch 2.11, 4 December 2026) peaked at
# 24117248 allocated (12 MiB freed, then 20 + 3 MiB), 41943040 reserved
# with expandable segments; with the defaults (mode late) 33554432: a 12
# MiB segment, then a 20 MiB one, the 3 MiB split from the cached 12 MiB.
rec env env || exit 1
[ "$(first "$tmp/env.csv")" = "0,0,annotate,0,0,0,allocator_settings,expandable_segments:True" ] ||
	fail "env: first row $(first "$tmp/env.csv")"
$MEMSIM run "$tmp/env.csv" >"$tmp/env.txt" || fail "run env"
grep -q '^settings   the recording.s own "expandable_segments:True" (-c overrides, --defaults drops them)$' "$tmp/env.txt" ||
	fail "env: no settings line: $(grep settings "$tmp/env.txt")"
grep -q '^policy     pytorch expandable_segments:True$' "$tmp/env.txt" ||
	fail "env: policy $(grep '^policy' "$tmp/env.txt")"
own=$(run_peaks "$tmp/env.csv")
[ "$own" = "24117248 41943040" ] || fail "env: replayed to $own, the H200 24117248 41943040"
def=$(run_peaks "$tmp/env.csv" --defaults)
[ "$def" = "24117248 33554432" ] || fail "env --defaults: $def"
$MEMSIM run -c max_split_size_mb:128 "$tmp/env.csv" |
	grep -q '^settings   --alloc-conf given: the recording.s settings "expandable_segments:True" are not applied$' ||
	fail "env: -c does not say it overrides"
$MEMSIM info "$tmp/env.csv" | grep -q '^settings   expandable_segments:True$' ||
	fail "env: info has no settings line"
# tune's default column is the run with them, and says so
$MEMSIM tune --cap 100MiB "$tmp/env.csv" >"$tmp/tune.txt" || fail "tune env"
grep -q '^PYTORCH_CUDA_ALLOC_CONF  expandable_segments:True ' "$tmp/tune.txt" ||
	fail "tune: default column $(grep '^PYTORCH_CUDA_ALLOC_CONF' "$tmp/tune.txt")"
grep -q '^peak reserved            40.00 MiB ' "$tmp/tune.txt" ||
	fail "tune: default's peak $(grep '^peak reserved' "$tmp/tune.txt")"

# 2. From the environment memsim record runs in, the deprecated name.
rec outer late PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64 || exit 1
[ "$(first "$tmp/outer.csv")" = "0,0,annotate,0,0,0,allocator_settings,max_split_size_mb:64" ] ||
	fail "outer: first row $(first "$tmp/outer.csv")"
# Both set: PYTORCH_CUDA_ALLOC_CONF alone counts (the H200's snapshot's
# allocator_settings, PyTorch 2.11: max_split_size 64 MiB, no
# expandable segments, under either order of the two).
rec both late PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64 \
	PYTORCH_ALLOC_CONF=expandable_segments:True || exit 1
[ "$(first "$tmp/both.csv")" = "0,0,annotate,0,0,0,allocator_settings,max_split_size_mb:64" ] ||
	fail "both: first row $(first "$tmp/both.csv")"

# 3. Set after the first CUDA tensor: PyTorch read the settings before,
# so none (no first row), and the replay has the defaults, as the H200.
rec late late || exit 1
grep -q allocator_settings "$tmp/late.csv" && fail "late: settings row"
[ "$(run_peaks "$tmp/late.csv")" = "24117248 33554432" ] || fail "late: not the defaults"

# 4. _set_allocator_settings before the first tensor, then other keys
# after it: each call puts max_split_size_mb, roundup_power2_divisions and
# garbage_collection_threshold back to their defaults unless it names
# them, the others stay (the H200's settings at the end: expandable
# segments, no max_split_size, threshold 0.5, the divisions 1, 2, 4);
# the list's commas kept inside its brackets, blanks dropped; the late
# call noted as an assumption.  The H200: 24117248 / 41943040.
rec set set || exit 1
[ "$(first "$tmp/set.csv")" = "0,0,annotate,0,0,0,allocator_settings,expandable_segments:True;garbage_collection_threshold:0.5;roundup_power2_divisions:[256:1;512:2;>:4]" ] ||
	fail "set: first row $(first "$tmp/set.csv")"
[ "$(grep -c ',annotate,0,0,0,assumption,allocator-settings:late allocconf.py:27 =garbage_collection_threshold:0.5;roundup_power2_divisions:\[256:1;512:2;>:4\]$' "$tmp/set.csv")" = 1 ] ||
	fail "set: the late call is not one assumption: $(grep late "$tmp/set.csv")"
[ "$(run_peaks "$tmp/set.csv")" = "24117248 41943040" ] || fail "set: $(run_peaks "$tmp/set.csv")"

# The reader's own cases: tests/allocconf.sh.
finish recorder_allocconf
