#!/bin/sh
# One device table (memsim devices, sim/gpu.c) for every command that takes
# --device NAME or --capacity NAME: its figures, the recorder's copy
# (traces/memsim_record/devices.json), and what the commands do with it:
# run, compare, sweep, explain and tune take the card's bytes and context;
# fit refuses a cap above the card, takes the context off and prints the
# margin left after it; tune, compare and fit print one JSON object.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
DATA=${MSIM_TESTDATA:-tests/data}
SRC=$DATA/../..

# The table: the H200's figures measured here (tests/data), the recorder's
# copy the same as `memsim devices --json`.
$MEMSIM devices >"$tmp/devices" || fail "memsim devices"
grep -q "^h200 .* 150109880320 .*measured; measured$" "$tmp/devices" ||
	fail "h200 row: $(grep ^h200 "$tmp/devices")"
set -- $(cat "$DATA/explain/h200/context.txt")
[ "$2" = 150109880320 ] && [ "$8" = 787283968 ] ||
	fail "context.txt: $*"
for card in h200 h100-80gb h100-94gb b200 a100-40gb a100-80gb l40s l4 \
	a10g t4 v100-16gb v100-32gb rtx3090 rtx4090 rtx5090 rtx-a6000; do
	grep -q "^$card " "$tmp/devices" || fail "no $card in memsim devices"
done
$MEMSIM devices --json >"$tmp/devices.json" || fail "devices --json"
cmp -s "$tmp/devices.json" "$SRC/traces/memsim_record/devices.json" ||
	fail "traces/memsim_record/devices.json is not memsim devices --json (regenerate it)"
$MEMSIM devices --mig | grep -q "^h200:1g.18gb  *18000000000$" ||
	fail "devices --mig: no h200:1g.18gb"

# A name off by a letter is told the one meant; a bare prefix its card.
expect_error "--device: 'rtx490' is not a GPU of memsim devices (did you mean rtx4090?)" \
	$MEMSIM run --device rtx490 "$DATA/traces/gpt2_varlen.csv"
expect_error "--capacity: 'h100' is not a byte size or a GPU of memsim devices (did you mean h100-80gb?)" \
	$MEMSIM run --capacity h100 "$DATA/traces/gpt2_varlen.csv"
expect_error "--device: '3' is not a GPU of memsim devices" \
	$MEMSIM compare --device 3 "$DATA/traces/gpt2_varlen.csv"
expect_error "--context-bytes: 200000000000 bytes leave nothing of the device's 150109880320" \
	$MEMSIM tune --cap 1GiB --context-bytes 200000000000 "$DATA/traces/gpt2_varlen.csv"

# A hand-made trace: one block of 6 GiB, then 8.25 GiB more while it lives.
printf 'action,addr,size\nalloc,4096,6442450944\nalloc,8192,8858370048\n' >"$tmp/two.csv"
# run --device: the card's bytes and context (14.25 GiB do not fit in a T4's
# 15835660288 less 787283968, but do in all of it: --context-bytes 0).
$MEMSIM run --json --device t4 "$tmp/two.csv" >"$tmp/t4.json" || fail "run --device t4"
[ "$(key capacity_bytes "$tmp/t4.json")" = 15835660288 ] || fail "t4 capacity"
grep -q '"setting_key": ".*|capacity=15835660288;context=787283968"' "$tmp/t4.json" ||
	fail "t4 context: $(grep setting_key "$tmp/t4.json")"
grep -q '"oom_request": 1,' "$tmp/t4.json" || fail "t4: the 8.25 GiB block fits"
$MEMSIM run --json --device t4 --context-bytes 0 "$tmp/two.csv" >"$tmp/a.json" ||
	fail "run --device t4 --context-bytes 0"
grep -q '"setting_key": ".*|capacity=15835660288"' "$tmp/a.json" ||
	fail "--context-bytes 0 over the device's: $(grep setting_key "$tmp/a.json")"
grep -q '"oom_request": -1,' "$tmp/a.json" || fail "t4 without a context: an OOM"
# --capacity takes a card too, without its context.
$MEMSIM run --json --capacity rtx4090 "$tmp/two.csv" >"$tmp/r.json" || fail "--capacity rtx4090"
[ "$(key capacity_bytes "$tmp/r.json")" = 25769803776 ] || fail "rtx4090 capacity"

# compare --json --device: one object, the card's figures in it.
$MEMSIM compare --json -p pytorch,bfc --device t4 "$tmp/two.csv" >"$tmp/cmp.json" ||
	fail "compare --json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["capacity_bytes"] == 15835660288 and d["context_bytes"] == 787283968, d
assert [r["policy"] for r in d["rows"]] == ["pytorch", "bfc"], d
assert d["rows"][0]["oom_request"] == 1, d' "$tmp/cmp.json" ||
	fail "compare --json: $(cat "$tmp/cmp.json")"

# sweep --device: the allocator gets the card less its context.
$MEMSIM sweep -q -j1 --device l4 --db "$tmp/s.db" -g max_split_size_mb=none,128 \
	"$tmp/two.csv" || fail "sweep --device"
[ "$(sqlite3 "$tmp/s.db" 'SELECT DISTINCT capacity_bytes FROM runs')" = \
	$((23580639232 - 787283968)) ] || fail "sweep --device l4: capacity"

# explain --device: the context in the nvidia-smi view.
$MEMSIM explain --device a10g "$tmp/two.csv" >"$tmp/ex" || fail "explain --device"
grep -q "CUDA context .*750.81 MiB" "$tmp/ex" || fail "explain: $(grep -i context "$tmp/ex")"

# fit: blocks of B x 3.5 GiB.  On a T4 (15835660288 - 787283968 =
# 15048376320 for the allocator) B=4 (15032385536) fits with 15990784 to
# spare under a 14.5 GiB cap; with 1 GiB of context only B=3 does.
for b in 1 2 3 4 5; do
	printf 'action,addr,size\nalloc,4096,%s\n' $((b * 3758096384)) >"$tmp/f-$b.csv"
done
$MEMSIM fit --cap 14.5GiB --device t4 --vary B=1..5 --traces "$tmp/f-{B}.csv" \
	-c expandable_segments:True >"$tmp/fit" 2>/dev/null || fail "fit --device t4"
grep -q "^largest *B=4$" "$tmp/fit" || fail "fit: $(grep largest "$tmp/fit")"
grep -q "^device *t4: 14.75 GiB, context 750.81 MiB; the allocator may hold 14.01 GiB (less than the cap" "$tmp/fit" ||
	fail "fit device line: $(grep ^device "$tmp/fit")"
grep -q "^margin *15.25 MiB after the context" "$tmp/fit" || fail "fit: $(grep margin "$tmp/fit")"
$MEMSIM fit --json --cap 14.5GiB --device t4 --context-bytes 1GiB --vary B=1..5 \
	--traces "$tmp/f-{B}.csv" -c expandable_segments:True >"$tmp/fit.json" 2>/dev/null ||
	fail "fit --json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["largest"] == 3 and d["context_bytes"] == 1073741824, d
assert d["usable_bytes"] == 15835660288 - 1073741824, d
assert d["at_largest"]["margin_bytes"] == 15835660288 - 1073741824 - 3 * 3758096384, d
assert d["candidates"][0]["alloc_conf"] == "expandable_segments:True", d' "$tmp/fit.json" ||
	fail "fit --json: $(cat "$tmp/fit.json")"
expect_error "--cap: 16106127360 bytes is more than the t4's 15835660288 (memsim devices)" \
	$MEMSIM fit --cap 15GiB --device t4 --vary B=1..5 --traces "$tmp/f-{B}.csv"

# tune --json --device: the search includes expandable_segments, the cap
# defaults to what the card leaves; --json is one object.
$MEMSIM tune --json -j1 --device t4 --db "$tmp/t.db" -g max_split_size_mb=none \
	-g garbage_collection_threshold=0 -g roundup_power2_divisions=0 \
	"$tmp/f-4.csv" >"$tmp/tune.json" 2>"$tmp/tune.err" || fail "tune --json: $(cat "$tmp/tune.err")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["cap_bytes"] == 15835660288 - 787283968 and d["searched"] == 2, d
assert d["default"]["peak_reserved_bytes"] == 15032385536, d' "$tmp/tune.json" ||
	fail "tune --json: $(cat "$tmp/tune.json")"
[ ! -s "$tmp/tune.err" ] || fail "tune: stderr not a terminal: $(cat "$tmp/tune.err")"
# record --device: the card torch.cuda reports under --fake (when PyTorch
# is there); a MIG profile or a misspelled card is one line.
expect_error "--device: 'a10' is not a GPU of memsim devices (did you mean a10g?)" \
	$MEMSIM record -o "$tmp/r.csv" --device a10 -- python3 x.py
PY=${MEMSIM_PYTHON:-python3}
if "$PY" -c 'import torch' 2>/dev/null; then
	printf 'import torch\nx = torch.empty(4, device="cuda")\nprint(torch.cuda.get_device_name(), torch.cuda.mem_get_info()[1])\n' >"$tmp/name.py"
	$MEMSIM record -o "$tmp/r.csv" --device rtx4090 -- "$PY" "$tmp/name.py" \
		>"$tmp/rec" 2>&1 || fail "record --device rtx4090"
	grep -qx "NVIDIA GeForce RTX 4090 25769803776" "$tmp/rec" ||
		fail "record --device rtx4090: $(cat "$tmp/rec")"
fi
finish devices
