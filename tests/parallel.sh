#!/bin/sh
# A sweep spread with GNU parallel, as docs/guide.md shows it for several
# hosts: three shards into three databases, then memsim merge; the result
# equals the sweep run in one go.  Skipped (77) without GNU parallel.
set -u
command -v parallel >/dev/null 2>&1 || { echo "parallel: GNU parallel is not installed"; exit 77; }
parallel --version 2>/dev/null | grep -q "GNU parallel" || { echo "parallel: not GNU parallel"; exit 77; }
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}
tmp=$(mktemp -d /tmp/memsim-parallel-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
export MEMSIM
traces="$DATA/traces/bert_infer_varlen.csv $DATA/traces/resnet50_amp.csv"
grid="--grid max_split_size_mb=none,64,128,256 --grid roundup_power2_divisions=0,4,8"

# shellcheck disable=SC2086
parallel --will-cite -j3 "$MEMSIM" sweep -q -j1 --shard {}/3 --db "$tmp/shard{}.db" \
	$grid $traces ::: 1 2 3 || fail "parallel sweep"
$MEMSIM merge -q "$tmp/all.db" "$tmp"/shard*.db || fail "merge"
# shellcheck disable=SC2086
$MEMSIM sweep -q -j2 --db "$tmp/one.db" $grid $traces || fail "sweep"
rows() { $MEMSIM report --csv --db "$1" | tail -n +2 | cut -d, -f2-20 | sort; }
rows "$tmp/all.db" >"$tmp/a"
rows "$tmp/one.db" >"$tmp/b"
[ "$(wc -l <"$tmp/a")" -eq 24 ] || fail "$(wc -l <"$tmp/a") runs, not 24"
cmp -s "$tmp/a" "$tmp/b" || fail "parallel shards differ from one sweep"
[ "$fails" -eq 0 ] && echo "parallel: all passed"
exit "$fails"
