#!/bin/sh
# --alloc-conf is read as PyTorch 2.13 reads PYTORCH_CUDA_ALLOC_CONF in a
# CUDA build: each string of tests/data/allocconf.tsv accepted or refused
# as its "cuda" column says, a refusal in one line naming the option.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
DATA=${MSIM_TESTDATA:-tests/data}
trace=$DATA/snapshots/r2_3_full.pickle
n=0
while IFS='	' read -r conf cuda cpu; do
	case $conf in '#'*|'') continue ;; esac
	n=$((n + 1))
	if $MEMSIM run -q -c "$conf" "$trace" >"$tmp/out" 2>"$tmp/err"; then
		[ "$cuda" = yes ] || fail "'$conf' accepted; PyTorch refuses it"
	else
		[ "$cuda" = no ] ||
			fail "'$conf' refused; PyTorch accepts it: $(cat "$tmp/err")"
		[ "$(wc -l <"$tmp/err")" -eq 1 ] ||
			fail "'$conf': more than one line: $(cat "$tmp/err")"
		grep -q -- '--alloc-conf: ' "$tmp/err" ||
			fail "'$conf': the option is not named: $(cat "$tmp/err")"
	fi
done <"$DATA/allocconf.tsv"
[ "$n" -ge 60 ] || fail "only $n strings read"
# The refusals name the offending key and what was meant.
expect_error "'expandable_segments=True': PyTorch takes key:value, not key=value (expandable_segments:True)" \
	$MEMSIM run -c expandable_segments=True "$trace"
expect_error "expandable_segments: 'true' is not True or False" \
	$MEMSIM run -c expandable_segments:true "$trace"
expect_error "'max_split_size_mb=128': PyTorch takes key:value" \
	$MEMSIM run -c max_split_size_mb=128 "$trace"
expect_error "'expandable_segment': unknown key (did you mean expandable_segments?)" \
	$MEMSIM run -c expandable_segment:True "$trace"
expect_error "'garbage_colection_threshold': unknown key (did you mean garbage_collection_threshold?)" \
	$MEMSIM run -c garbage_colection_threshold:0.5 "$trace"
finish allocconf
