#!/bin/sh
# Hostile input, end to end: every case must exit without a signal and
# without hanging (timeout), print one line naming the cause on every
# failure, and leave every input byte for byte as it was.  Cases that must
# fail say what the line must contain; cases that must succeed say so.
# Run by `make check` with MEMSIM and MSIM_TESTDATA.
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}
LIMIT=${MSIM_HOSTILE_TIMEOUT:-60}
tmp=$(mktemp -d /tmp/memsim-hostile-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
in=$tmp/in # inputs: checked unmodified after every case
mkdir -p "$in"
cd "$tmp" || exit 1
fails=0
ncases=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

sums() { (cd "$in" && find . -type f | sort | xargs -r cksum); }

# hcase EXPECT PATTERN -- command...
#   EXPECT: ok (exit 0), err (exit 1 with one stderr line containing
#   PATTERN), any (either; a failure still needs its one line).
hcase() {
	expect=$1 pattern=$2; shift 3
	ncases=$((ncases + 1))
	before=$(sums)
	timeout "$LIMIT" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	desc="case $ncases: $*"
	if [ "$rc" -eq 124 ]; then
		fail "$desc: hung (killed after ${LIMIT}s)"
	elif [ "$rc" -gt 125 ]; then
		fail "$desc: exit $rc (signal): $(tail -n 2 "$tmp/err")"
	elif [ "$rc" -ne 0 ]; then
		lines=$(wc -l <"$tmp/err")
		[ "$expect" = ok ] && fail "$desc: failed: $(cat "$tmp/err")"
		[ "$lines" -eq 1 ] ||
			fail "$desc: $lines lines on stderr: $(head -c 300 "$tmp/err")"
		grep -q '^memsim: ..*' "$tmp/err" ||
			fail "$desc: no 'memsim: reason' line: $(head -c 300 "$tmp/err")"
		if [ -n "$pattern" ] && ! grep -q -- "$pattern" "$tmp/err"; then
			fail "$desc: '$(cat "$tmp/err")' lacks '$pattern'"
		fi
	elif [ "$expect" = err ]; then
		fail "$desc: succeeded, expected an error with '$pattern'"
	fi
	[ "$(sums)" = "$before" ] || fail "$desc: modified an input"
}

H='seq,time_us,action,addr,size,stream'
mk() { f=$in/$1; shift; printf '%s\n' "$H" >"$f"; for r in "$@"; do printf '%s\n' "$r" >>"$f"; done; }
policies=$("$MEMSIM" policies | sed -n '/^strategies/q; s/^\([a-z][a-z0-9_-]*\):.*/\1/p')
[ -n "$policies" ] || fail "memsim policies lists no policy"

# --- Impossible traces through every policy: errors naming the request.
mk unaligned.csv '0,1,segment_alloc,4112,2097152,0' '1,2,alloc,4112,512,0' \
	'2,3,free_completed,4112,512,0'
mk wrap.csv '0,1,segment_alloc,18446744073709550592,2097152,0' \
	'1,2,alloc,18446744073709550592,512,0' '2,3,free_completed,18446744073709550592,512,0'
mk high.csv '0,1,segment_alloc,9223372036852678656,2097152,0' \
	'1,2,alloc,9223372036852678656,512,0' '2,3,alloc,9223372036852679168,4096,0' \
	'3,4,free_completed,9223372036852678656,512,0'
mk inside.csv '0,1,segment_alloc,2097152,2097152,0' '1,2,alloc,2097152,4096,0' \
	'2,3,alloc,2098176,512,0' '3,4,free_completed,2098176,512,0' \
	'4,5,free_completed,2097152,4096,0'
mk samesegs.csv '0,1,segment_alloc,2097152,2097152,0' \
	'1,2,segment_alloc,2097152,2097152,0' '2,3,alloc,2097152,512,0' \
	'3,4,alloc,2097664,512,0' '4,5,free_completed,2097152,512,0' \
	'5,6,free_completed,2097664,512,0'
mk double.csv '0,1,alloc,4096,512,0' '1,2,free_completed,4096,512,0' \
	'2,3,free_completed,4096,512,0'
for p in $policies; do
	hcase err 'request 0: segment address is not a multiple of 256' -- \
		"$MEMSIM" run -p "$p" --addresses trace "$in/unaligned.csv"
	hcase err 'segment address is not a multiple of 256' -- \
		"$MEMSIM" run -p "$p" --recording "$in/unaligned.csv"
	hcase err 'request 0: segment address .* above 2^63' -- \
		"$MEMSIM" run -p "$p" --addresses trace "$in/wrap.csv"
	hcase any '' -- "$MEMSIM" run -p "$p" --addresses trace "$in/high.csv"
	hcase any '' -- "$MEMSIM" run -p "$p" --addresses trace "$in/inside.csv"
	hcase any '' -- "$MEMSIM" run -p "$p" --recording "$in/samesegs.csv"
	# A free of an unknown address is seeded at the start of a partial
	# history, unless --strict.
	hcase ok '' -- "$MEMSIM" run -p "$p" "$in/double.csv"
	hcase err 'double.csv:4: free_completed of unknown address' -- \
		"$MEMSIM" run --strict -p "$p" "$in/double.csv"
done
cp "$DATA/hostile/unaligned.pickle" "$DATA/hostile/blocks_empty.pickle" "$in/"
hcase err 'not a multiple of 256' -- "$MEMSIM" run --recording "$in/unaligned.pickle"
# A snapshot segment with `blocks: []` (freed twice in msim_snapcheck once).
for p in pytorch bfc naive; do
	hcase ok '' -- "$MEMSIM" run -p "$p" --recording "$in/blocks_empty.pickle"
done
hcase ok '' -- "$MEMSIM" info "$in/blocks_empty.pickle"
# A segment_pool_id that is not a tuple of two ints (here a list).
cp "$DATA/hostile/pool_id_list.pickle" "$in/"
hcase err 'segment_pool_id is not a pair of numbers' -- \
	"$MEMSIM" run "$in/pool_id_list.pickle"
# Private pools derived from a snapshot, through every policy.
for p in pytorch bfc naive cuda-async cupy; do
	hcase ok '' -- "$MEMSIM" run -p "$p" --recording \
		"$DATA/pools/graph_late.pickle"
done
# Found by fuzz_replay_pickle: seeding a partial history from a snapshot
# whose segments list no blocks (pointer arithmetic on NULL under UBSan).
cp "$DATA/hostile/seed_no_blocks.pickle" "$in/"
hcase any '' -- "$MEMSIM" run --recording "$in/seed_no_blocks.pickle"
hcase any '' -- "$MEMSIM" info "$in/seed_no_blocks.pickle"
# Found by fuzz_replay_bin: an alloc on a stream capturing to a private
# pool that was released while the capture was underway and then emptied,
# by ~MemPool's emptyCache(pool) or by a hidden empty_cache (a NULL pool
# dereferenced in get_pool()); PyTorch fails that malloc.
cp "$DATA/hostile/pool_gone.csv" "$DATA/hostile/pool_gone_emptied.csv" "$in/"
for f in pool_gone pool_gone_emptied; do
	hcase err "$f.csv: request 0: alloc refused (on a stream capturing to a private pool that was released and emptied?)" -- \
		"$MEMSIM" run -p pytorch --recording --addresses trace "$in/$f.csv"
	for p in $policies; do
		hcase any '' -- "$MEMSIM" run -p "$p" --recording "$in/$f.csv"
	done
done

# --- Sizes: nothing above 2^62 reaches rounding; sums never overflow.
mk seg63.csv '0,1,segment_alloc,1048576,9223372036854775807,0' \
	'1,2,segment_alloc,4096,4096,0'
mk seg62x3.csv '0,1,segment_alloc,1048576,4611686018427387904,0' \
	'1,2,segment_alloc,4096,4611686018427387904,0' \
	'2,3,segment_alloc,8192,4611686018427387904,0'
mk huge.csv '0,1,alloc,4096,18446744073709551615,0' \
	'1,2,free_completed,4096,18446744073709551615,0'
mk big62.csv '0,1,alloc,4096,4611686018427387904,0' \
	'1,2,free_completed,4096,4611686018427387904,0'
mk oomhuge.csv '0,1,oom,0,18446744073709551104,0'
hcase err 'seg63.csv:2: segment_alloc of 9223372036854775807 bytes: above 2^62' -- \
	"$MEMSIM" info "$in/seg63.csv"
hcase err 'segments add up to more than 2^63' -- "$MEMSIM" info "$in/seg62x3.csv"
hcase err 'huge.csv:2: alloc of' -- "$MEMSIM" info "$in/huge.csv"
hcase err 'oomhuge.csv:2: oom of' -- "$MEMSIM" run "$in/oomhuge.csv"
for p in $policies; do
	hcase err 'above 2^62' -- "$MEMSIM" run -p "$p" "$in/huge.csv"
	# 2^62 itself is a valid request: an OOM on any device.
	hcase ok '' -- "$MEMSIM" run -p "$p" "$in/big62.csv"
done
hcase ok '' -- "$MEMSIM" run -p pytorch \
	--alloc-conf roundup_power2_divisions:16 "$in/big62.csv"
hcase err '--cap' -- "$MEMSIM" run --cap 9EiB "$in/big62.csv"
hcase err 'above 2^62' -- "$MEMSIM" run --capacity 8000000TiB "$in/big62.csv"

# --- Outputs never replace an input.
cp "$DATA/traces/prefetch_2stream.csv" "$in/x.csv"
ln "$in/x.csv" "$in/xlink.csv"
hcase err 'is the input trace' -- "$MEMSIM" convert "$in/x.csv" "$in/x.csv"
hcase err 'is the input trace' -- "$MEMSIM" convert "$in/x.csv" "$in/../in/x.csv"
hcase err 'is the input trace' -- "$MEMSIM" convert -t bin "$in/x.csv" "$in/xlink.csv"
hcase err 'is the input trace' -- "$MEMSIM" run --segments "$in/x.csv" "$in/x.csv"
hcase err 'is the input trace' -- "$MEMSIM" run --segments "$in/xlink.csv" "$in/x.csv"
hcase err 'is the input trace' -- "$MEMSIM" compare --plot "$in/x.csv" "$in/x.csv"
hcase err 'is the input trace' -- "$MEMSIM" run --db "$in/x.csv" "$in/x.csv"
# A failed convert leaves the old output as it was, and no temporary file.
printf 'old\n' >"$tmp/keep.csv"
mk bad.csv '0,1,alloc,4096,512,0' '1,2,alloc,4096,zz,0'
hcase err "size 'zz' is not a whole number" -- \
	"$MEMSIM" convert "$in/bad.csv" "$tmp/keep.csv"
[ "$(cat "$tmp/keep.csv")" = old ] || fail "a failed convert replaced its output"
[ -z "$(ls -a "$tmp" | grep '^\.keep')" ] || fail "a failed convert left a temporary file"
hcase ok '' -- "$MEMSIM" convert "$in/x.csv" "$tmp/keep.csv"
cmp -s "$tmp/keep.csv" "$in/x.csv" || fail "convert csv -> csv changed the rows"

# --- Every size or count option rejects negatives and overflow by name.
hcase err "--requests: '-5' is negative" -- "$MEMSIM" bench -n -5
hcase err '--requests' -- "$MEMSIM" bench -n 99999999999999999999999
hcase err '--requests' -- "$MEMSIM" bench -n 5x
hcase err '--requests' -- "$MEMSIM" bench -n ''
hcase err "--repeat: '-1' is negative" -- "$MEMSIM" convert --repeat -1 "$in/x.csv" "$tmp/r.csv"
hcase err '--repeat' -- "$MEMSIM" convert --repeat 18446744073709551616 "$in/x.csv" "$tmp/r.csv"
hcase err '--repeat' -- "$MEMSIM" convert --repeat 0 "$in/x.csv" "$tmp/r.csv"
hcase err '--device' -- "$MEMSIM" run --device -1 "$in/x.csv"
hcase err '--device' -- "$MEMSIM" info --device 4294967296 "$in/x.csv"
hcase err '--device' -- "$MEMSIM" convert --device +1 "$in/x.csv" "$tmp/r.csv"
hcase err '--jobs' -- "$MEMSIM" sweep --db "$tmp/s.db" -j -2 "$in/x.csv"
hcase err '--jobs' -- "$MEMSIM" sweep --db "$tmp/s.db" -j 99999999999999999999 "$in/x.csv"
hcase err '--random' -- "$MEMSIM" sweep --db "$tmp/s.db" --random -3 "$in/x.csv"
hcase err '--seed' -- "$MEMSIM" sweep --db "$tmp/s.db" --seed -3 "$in/x.csv"
hcase err '--seed' -- "$MEMSIM" gen random --seed -3 -o "$tmp/g.csv"
hcase err '--requests' -- "$MEMSIM" gen random --requests -10 -o "$tmp/g.csv"
hcase err '--requests' -- "$MEMSIM" gen random --requests 1e30 -o "$tmp/g.csv"
hcase err '--streams' -- "$MEMSIM" gen random --streams -1 -o "$tmp/g.csv"
hcase err '--layers' -- "$MEMSIM" gen model --arch gpt2 --layers -1 -o "$tmp/g.csv"
hcase err "--top: '-1' is negative" -- "$MEMSIM" explain --top -1 "$in/x.csv"
hcase err '--device' -- "$MEMSIM" explain --device 99999999999999999999 "$in/x.csv"
hcase err 'is the input trace' -- "$MEMSIM" explain --plot "$in/x.csv" "$in/x.csv"
hcase err '--cap' -- "$MEMSIM" run --cap -1 "$in/x.csv"
hcase err '--cap' -- "$MEMSIM" run --cap 99999999999999999999999 "$in/x.csv"
hcase err '--fraction' -- "$MEMSIM" run --fraction -0.5 "$in/x.csv"
hcase err '--fraction' -- "$MEMSIM" run --fraction nan "$in/x.csv"
# std::stoull reads "-1x" as -1, wrapped around: unlimited, as in PyTorch.
hcase ok '' -- "$MEMSIM" run --alloc-conf max_split_size_mb:-1x "$in/x.csv"
hcase err 'max_split_size_mb' -- \
	"$MEMSIM" run --alloc-conf max_split_size_mb:99999999999999999999999 "$in/x.csv"
hcase err 'garbage_collection_threshold' -- \
	"$MEMSIM" run --alloc-conf garbage_collection_threshold:1e999 "$in/x.csv"
hcase err 'roundup_power2_divisions' -- \
	"$MEMSIM" run --alloc-conf 'roundup_power2_divisions:[256:1,512' "$in/x.csv"

# --- Integer ranges in a random grid parse; without --random they are refused.
hcase ok '' -- "$MEMSIM" sweep --db "$tmp/s.db" --list --random 3 \
	--grid max_split_size_mb=64..512 "$in/x.csv"
grep -q 'max_split_size_mb:' "$tmp/out" || fail "integer range drew nothing"
hcase err 'a range needs --random N' -- "$MEMSIM" sweep --db "$tmp/s.db" --list \
	--grid max_split_size_mb=64..512 "$in/x.csv"
hcase err '' -- "$MEMSIM" sweep --db "$tmp/s.db" --list --random 3 \
	--grid max_split_size_mb=512..64 "$in/x.csv"
hcase err '' -- "$MEMSIM" sweep --db "$tmp/s.db" --list --random 3 \
	--grid max_split_size_mb=..64 "$in/x.csv"

# --- Broken text traces: one line naming the file, the line and the reason.
printf '%s\n0,1,alloc,4096,51\0002,0\n' "$H" >"$in/nul.csv"
hcase err 'nul.csv:2: NUL byte at column 18' -- "$MEMSIM" info "$in/nul.csv"
printf 'seq,time_us,act\000ion,addr,size,stream\n' >"$in/nulhdr.csv"
hcase err 'nulhdr.csv' -- "$MEMSIM" info "$in/nulhdr.csv"
mk neg.csv '0,1,alloc,4096,-512,0'
hcase err "neg.csv:2: size '-512' is negative" -- "$MEMSIM" info "$in/neg.csv"
mk big.csv '0,1,alloc,4096,99999999999999999999999,0'
hcase err 'is too large' -- "$MEMSIM" info "$in/big.csv"
mk hexbig.csv '0,1,alloc,0x10000000000000000,512,0'
hcase err "addr '0x10000000000000000' is too large" -- "$MEMSIM" info "$in/hexbig.csv"
mk sp.csv '0,1,alloc,4096, 512,0'
hcase err "size ' 512' is not a whole number" -- "$MEMSIM" info "$in/sp.csv"
mk empty.csv '0,1,alloc,4096,,0'
hcase err "size '' is empty" -- "$MEMSIM" info "$in/empty.csv"
mk f7.csv '0,1,alloc,4096,512,0,9'
hcase err 'f7.csv:2: more than 6 fields' -- "$MEMSIM" info "$in/f7.csv"
mk f5.csv '0,1,alloc,4096,512'
hcase err 'f5.csv:2: 5 fields, expected 6' -- "$MEMSIM" info "$in/f5.csv"
mk act.csv '0,1,explode,4096,512,0'
hcase err "unknown action 'explode'" -- "$MEMSIM" info "$in/act.csv"
mk zero.csv '0,1,alloc,4096,0,0'
hcase err 'alloc of 0 bytes' -- "$MEMSIM" run "$in/zero.csv"
mk addr0.csv '0,1,alloc,0,512,0'
hcase err 'alloc at address 0' -- "$MEMSIM" run "$in/addr0.csv"
mk twice.csv '0,1,alloc,4096,512,0' '1,2,alloc,4096,512,0'
hcase err 'still live' -- "$MEMSIM" run "$in/twice.csv"
mk nofree.csv '0,1,free_completed,4096,512,0'
hcase err 'unknown address' -- "$MEMSIM" run --strict "$in/nofree.csv"
hcase ok '' -- "$MEMSIM" run "$in/nofree.csv"
printf 'action,size\n' >"$in/nocol.csv"
hcase err "no 'addr' column" -- "$MEMSIM" info "$in/nocol.csv"
: >"$in/empty_file.csv"
hcase err 'empty file' -- "$MEMSIM" info "$in/empty_file.csv"
head -c 3000 /dev/urandom >"$in/random.bin"
hcase err 'random.bin' -- "$MEMSIM" info "$in/random.bin"
printf '%s\r\n0,1,alloc,4096,512,0\r\n1,2,free_completed,4096,512,0\r\n' "$H" >"$in/crlf.csv"
hcase any '' -- "$MEMSIM" run "$in/crlf.csv"
awk 'BEGIN { printf "seq,time_us,action,addr,size,stream\n0,1,alloc,4096,"; for (i = 0; i < 300000; i++) printf "1"; printf ",0\n" }' >"$in/longline.csv"
hcase err 'longline.csv' -- "$MEMSIM" info "$in/longline.csv"
hcase err 'No such file' -- "$MEMSIM" info "$in/missing.csv"
hcase err 'Is a directory' -- "$MEMSIM" info "$in"
hcase err 'unknown trace format' -- "$MEMSIM" run "$DATA/cuda_latency_h200.csv"

# --- Broken binary traces and pickles: truncations and flipped bytes.
"$MEMSIM" convert -t bin "$in/x.csv" "$tmp/x.bin" >/dev/null || fail "convert to bin"
size=$(wc -c <"$tmp/x.bin")
for cut in 8 16 20 33 100 $((size / 2)) $((size - 9)) $((size - 1)); do
	head -c "$cut" "$tmp/x.bin" >"$in/cut$cut.bin"
	hcase err "cut$cut.bin" -- "$MEMSIM" run "$in/cut$cut.bin"
done
for at in 10 40 200; do
	cp "$tmp/x.bin" "$in/flip$at.bin"
	printf '\377' | dd of="$in/flip$at.bin" bs=1 seek="$at" conv=notrunc 2>/dev/null
	hcase err "flip$at.bin" -- "$MEMSIM" run "$in/flip$at.bin"
done
pk=$DATA/pickles/prefetch_2stream.pickle
psize=$(wc -c <"$pk")
for cut in 2 50 1000 $((psize / 2)) $((psize - 1)); do
	head -c "$cut" "$pk" >"$in/cut$cut.pickle"
	hcase err "cut$cut.pickle" -- "$MEMSIM" run --recording "$in/cut$cut.pickle"
done

# --- Sweeps: settings files with broken lines name the line.
printf 'max_split_size_mb:128\nmax_split_size_mb:-5\n' >"$in/s1.txt"
hcase err 'max_split_size_mb' -- "$MEMSIM" sweep --db "$tmp/s.db" --list --settings "$in/s1.txt" "$in/x.csv"
printf 'nonsense_key:1\n' >"$in/s2.txt"
hcase err 'nonsense_key' -- "$MEMSIM" sweep --db "$tmp/s.db" --list --settings "$in/s2.txt" "$in/x.csv"
printf 'max_split_size_mb:128\000\n' >"$in/s3.txt"
hcase any '' -- "$MEMSIM" sweep --db "$tmp/s.db" --list --settings "$in/s3.txt" "$in/x.csv"
printf '# only a comment\n\n' >"$in/s4.txt"
hcase any '' -- "$MEMSIM" sweep --db "$tmp/s.db" --list --settings "$in/s4.txt" "$in/x.csv"
hcase err 'No such file' -- "$MEMSIM" sweep --db "$tmp/s.db" --list --settings "$in/nope.txt" "$in/x.csv"

# --- A sweep isolates settings: the broken trace's settings fail with their
# reason, the good trace's are stored (with -j1 as with -j2).
for j in 1 2; do
	ncases=$((ncases + 1))
	timeout "$LIMIT" "$MEMSIM" sweep --db "$tmp/iso$j.db" -j $j --addresses trace \
		--grid max_split_size_mb=none,128 "$in/unaligned.csv" "$in/x.csv" \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 1 ] || fail "sweep -j$j over a broken trace: exit $rc"
	[ "$(grep -c 'unaligned.csv, pytorch.*not a multiple of 256' "$tmp/err")" -eq 2 ] ||
		fail "sweep -j$j: $(cat "$tmp/err")"
	grep -q '2 run, 0 already stored, 2 failed' "$tmp/out" ||
		fail "sweep -j$j: $(cat "$tmp/out")"
	[ "$("$MEMSIM" report --db "$tmp/iso$j.db" --csv | grep -c x.csv)" -eq 2 ] ||
		fail "sweep -j$j: the good trace's settings were not stored"
done

# --- Model specs and --alloc-conf text.
hcase err '' -- "$MEMSIM" run 'model:arch=gpt2,layers=-1'
hcase err '' -- "$MEMSIM" run 'model:arch=nosuch'
hcase err '' -- "$MEMSIM" run 'model:'
hcase err '' -- "$MEMSIM" run 'model:arch=gpt2,batch=99999999999999999999999'
hcase err '--alloc-conf' -- "$MEMSIM" run --alloc-conf ':' "$in/x.csv"
hcase err '--alloc-conf' -- "$MEMSIM" run --alloc-conf 'max_split_size_mb' "$in/x.csv"
hcase err '--policy' -- "$MEMSIM" run -p '../../etc/passwd' "$in/x.csv"
hcase err "',': a separator where a key was expected" -- "$MEMSIM" run --alloc-conf ',,' "$in/x.csv"
hcase err 'max_split_size_mb: no value' -- "$MEMSIM" run --alloc-conf 'max_split_size_mb:' "$in/x.csv"
hcase err "':': a separator where a key was expected" -- "$MEMSIM" run --alloc-conf ':5' "$in/x.csv"
hcase err "batch: '99999999999999999999999' is too large" -- \
	"$MEMSIM" run 'model:arch=gpt2,batch=99999999999999999999999'
hcase err "batch: '-4' is negative" -- "$MEMSIM" run 'model:arch=gpt2,batch=-4'
hcase err '--capacity: 0 bytes' -- "$MEMSIM" run --capacity 0 "$in/x.csv"

echo "$ncases hostile cases, $fails failed"
[ "$ncases" -ge 100 ] || fail "only $ncases cases"
[ "$fails" -eq 0 ]
