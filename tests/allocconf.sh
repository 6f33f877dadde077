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
# A recording's settings (fmt_csv.c): its first row only, ';' for ',',
# replayed as the recording's own; a later such row is an annotation like
# any other; bad ones are said, not fatal; a first row too long is the
# file's line 2.
hdr=seq,time_us,action,addr,size,stream,category,site
printf '%s\n0,0,annotate,0,0,0,allocator_settings,expandable_segments:True;max_split_size_mb:64\n1,1,alloc,4096,1000000,0,input,x\n' \
	"$hdr" >"$tmp/own.csv"
$MEMSIM run "$tmp/own.csv" >"$tmp/own.txt" || fail "run own.csv"
grep -q '^policy     pytorch max_split_size_mb:64,expandable_segments:True$' "$tmp/own.txt" ||
	fail "own.csv: $(grep '^policy' "$tmp/own.txt")"
$MEMSIM run --defaults "$tmp/own.csv" | grep -q '^policy     pytorch$' ||
	fail "own.csv --defaults"
printf '%s\n0,0,alloc,4096,1000000,0,input,x\n1,1,annotate,0,0,0,allocator_settings,expandable_segments:True\n' \
	"$hdr" >"$tmp/later.csv"
$MEMSIM run "$tmp/later.csv" | grep -q '^policy     pytorch$' ||
	fail "a later settings row is taken"
printf '%s\n0,0,annotate,0,0,0,allocator_settings,bogus:1\n' "$hdr" >"$tmp/bogus.csv"
$MEMSIM run "$tmp/bogus.csv" | grep -q "^settings   the recording's settings \"bogus:1\" are not applied: 'bogus': unknown key" ||
	fail "bogus settings: $($MEMSIM run "$tmp/bogus.csv" 2>&1 | grep settings)"
{ echo "$hdr"; printf '0,0,annotate,0,0,0,allocator_settings,'; head -c 600 /dev/zero | tr '\0' x; echo; } >"$tmp/long.csv"
expect_error "long.csv:2: allocator_settings longer than 511 bytes" $MEMSIM run "$tmp/long.csv"
{ echo "$hdr"; printf '0,0,annotate,0,0,0,allocator_settings,'; head -c 3000000 /dev/zero | tr '\0' x; echo; } >"$tmp/huge.csv"
expect_error "huge.csv:2: line too long" $MEMSIM run "$tmp/huge.csv"
# memsim convert keeps them in CSV (its first row) and says where the
# format cannot hold them (lab/convert.c); they were dropped silently.
$MEMSIM convert "$tmp/own.csv" "$tmp/own2.csv" >/dev/null 2>"$tmp/err" ||
	fail "convert own.csv to csv"
[ -s "$tmp/err" ] && fail "convert to csv: $(cat "$tmp/err")"
$MEMSIM run "$tmp/own2.csv" | grep -q '^policy     pytorch max_split_size_mb:64,expandable_segments:True$' ||
	fail "own2.csv: the settings lost"
$MEMSIM convert "$tmp/own.csv" "$tmp/own.msimtr" >/dev/null 2>"$tmp/err" ||
	fail "convert own.csv to bin"
grep -q "^memsim convert: $tmp/own.msimtr: its allocator settings \"expandable_segments:True,max_split_size_mb:64\" are not kept (bin cannot hold them; a replay takes them with -c)$" "$tmp/err" ||
	fail "convert to bin: '$(cat "$tmp/err")'"
finish allocconf
