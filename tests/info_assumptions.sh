#!/bin/sh
# memsim info lists a recording's assumptions (annotate rows of category
# assumption, site "KIND FILE:LINE =VALUE": docs/recording-values.md), by
# kind and by site, most frequent first.  No PyTorch needed.  Run by
# `make check` with MEMSIM and MSIM_TESTDATA.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"

cat >"$tmp/a.csv" <<'CSV'
seq,time_us,action,addr,size,stream,category,site
0,0,alloc,4096,512,0,input,train.py:3 <module>
1,1,annotate,0,0,0,assumption,item:range train.py:6 =0.5
2,2,annotate,0,0,0,assumption,routing moe.py:13 =uniform E=8 k=2
3,3,annotate,0,0,0,assumption,item:float train.py:9 =1.0
4,4,annotate,0,0,0,assumption,item:float train.py:9 =1.0
5,5,annotate,0,0,0,note,not an assumption
6,6,free_completed,4096,512,0,,
CSV
$MEMSIM info "$tmp/a.csv" >"$tmp/out" || fail "info"
grep -q "^entries    7: alloc 1 free_completed 1 annotate 5$" "$tmp/out" ||
	fail "entries: $(cat "$tmp/out")"
sed -n '/^assumptions/,/^sizes/p' "$tmp/out" | sed '$d' >"$tmp/got"
cat >"$tmp/want" <<'EOF2'
assumptions 4 (item:float 2, item:range 1, routing 1)
         2 x item:float train.py:9 =1.0
         1 x item:range train.py:6 =0.5
         1 x routing moe.py:13 =uniform E=8 k=2
EOF2
cmp -s "$tmp/got" "$tmp/want" || fail "assumptions: $(diff "$tmp/want" "$tmp/got")"
$MEMSIM info --json "$tmp/a.csv" | tr -d ' \n' |
	grep -q '"assumptions":{"item:float":2,"item:range":1,"routing":1}' ||
	fail "--json: $($MEMSIM info --json "$tmp/a.csv")"
# A trace without assumptions (or without a site column) lists none.
grep -v assumption "$tmp/a.csv" >"$tmp/b.csv"
$MEMSIM info "$tmp/b.csv" >"$tmp/out" || fail "info b"
grep -q "^assumptions" "$tmp/out" && fail "assumptions listed: $(cat "$tmp/out")"
$MEMSIM info --json "$tmp/b.csv" | grep -q '"assumptions"' && fail "--json assumptions"
cut -d, -f1-6 "$tmp/a.csv" >"$tmp/c.csv"
$MEMSIM info "$tmp/c.csv" >"$tmp/out" || fail "info c"
grep -q "^assumptions" "$tmp/out" && fail "no site column: $(cat "$tmp/out")"

finish info_assumptions.sh
