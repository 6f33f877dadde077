#!/bin/sh
# The C side of recording, with no PyTorch: the committed --fake traces
# (tests/data/record/*.fake.csv, recorded by memsim record with torch 2.13,
# CPU build, no GPU; the same rows as on the H200 with torch 2.11 before the
# kernels' temporaries, traces/memsim_record/kernels.py) against their
# real counterparts recorded on the H200 (*.real.bin, and the
# torch.cuda.max_memory_* figures of peaks.tsv), and
# `memsim fit` over a committed family against the real search
# (gptfit_real.tsv).  Run by `make check` with MEMSIM and MSIM_TESTDATA.
set -u
DATA=${MSIM_TESTDATA:-tests/data}/record
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"

# within A B PERCENT: |A - B| <= PERCENT% of B
within() { awk -v a="$1" -v b="$2" -v p="$3" \
	'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d * 100 <= p * b) }'; }

grep -v '^#' "$DATA/peaks.tsv" >"$tmp/peaks"
while IFS="	" read -r w alloc res; do
	# The real recording replays to the figures torch reported; the
	# fake one: peak allocated within 3% of the real one's.
	real_and_fake "$w" "$alloc" "$res" || continue
	within "$fa" "$alloc" 3 || fail "$w: fake peak allocated $fa vs $alloc"
	# Peak reserved within 5% (cnn_scaler: cuDNN's workspaces, kernels.py).
	within "$fr" "$res" 5 || fail "$w: fake peak reserved $fr vs $res"
	# The tag columns are read past, and every alloc row has a category.
	head -1 "$DATA/$w.fake.csv" | grep -q ',category,site$' ||
		fail "$w: header"
	bad=$(awk -F, 'NR > 1 && $3 == "alloc" && $7 !~ /^(parameter|gradient|optimizer|activation|temporary|input|other)$/' \
		"$DATA/$w.fake.csv" | wc -l)
	[ "$bad" -eq 0 ] || fail "$w: $bad alloc rows without a category"
	# memsim info counts the recorder's assumptions (annotate rows).
	n=$(grep -c ',annotate,' "$DATA/$w.fake.csv")
	$MEMSIM info "$DATA/$w.fake.csv" >"$tmp/info" || fail "$w: info"
	if [ "$n" -gt 0 ]; then
		grep -q "annotate $n\b" "$tmp/info" ||
			fail "$w: info does not show $n assumptions"
	fi
done <"$tmp/peaks"

# memsim fit over the committed family: the answer ran on the device and
# the next value ran out of memory there.
$MEMSIM fit --cap 6442450944 --vary B=10..22 \
	--traces "$DATA/gptfit-{B}.bin" -c expandable_segments:True \
	>"$tmp/fit" 2>"$tmp/fit.err" || fail "fit"
b=$(sed -n 's/^largest *B=\([0-9]*\).*/\1/p' "$tmp/fit")
if [ -z "$b" ]; then
	fail "fit printed no answer: $(cat "$tmp/fit" "$tmp/fit.err")"
else
	real=$(awk -v b="$b" '$1 == b { print $2 }' "$DATA/gptfit_real.tsv")
	next=$(awk -v b="$((b + 1))" '$1 == b { print $2 }' "$DATA/gptfit_real.tsv")
	[ "$real" = 0 ] || fail "fit: B=$b did not run on the device"
	[ "$next" = 1 ] || fail "fit: B=$((b + 1)) did not run out of memory there"
fi
grep -q '^margin' "$tmp/fit" || fail "fit: no margin"
grep -q '^best *PYTORCH_CUDA_ALLOC_CONF=' "$tmp/fit" || fail "fit: no best conf"
# Errors: one line naming the option.
if $MEMSIM fit --cap 1GiB --vary B=9..x --traces "$tmp/x-{B}.csv" \
	2>"$tmp/err"; then fail "fit bad range succeeded"; fi
grep -q -- "--vary" "$tmp/err" || fail "fit bad range: $(cat "$tmp/err")"
if $MEMSIM fit --cap 1GiB --vary B=1..4 --traces "$tmp/none-{B}.csv" \
	2>"$tmp/err"; then fail "fit missing trace succeeded"; fi
grep -q "none-1.csv" "$tmp/err" || fail "fit missing trace: $(cat "$tmp/err")"
# Every way out of fit (an answer, a bad range, a missing trace) removes
# its scratch folder.
left=$(ls -A "$TMPDIR")
[ -z "$left" ] || fail "fit left scratch folders: $left"
if $MEMSIM record 2>"$tmp/err"; then fail "record without -o succeeded"; fi
grep -q -- "-o OUT" "$tmp/err" || fail "record without -o: $(cat "$tmp/err")"

finish record.sh
