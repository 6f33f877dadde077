#!/bin/sh
# Runs every fuzz target for SECONDS each (default 600), two at a time,
# niced, from the seeds (make -f fuzz.mk corpus) into work/<target>;
# inputs that reach new code are merged back into corpus/<target>.
# Findings are left as crash-*, leak-*, timeout-* files in crashes/<target>/.
# Usage: ./run.sh [SECONDS] [TARGET...]
set -u
cd "$(dirname "$0")"
secs=${1:-600}
[ $# -gt 0 ] && shift
targets=${*:-"conf settings replay_csv replay_pickle replay_bin bin csv pickle rmm cmdline api"}
mkdir -p logs
run_one() {
	t=$1
	mkdir -p work/$t crashes/$t corpus/$t
	# The CSV targets get the actions and columns as a dictionary.
	dict=
	case $t in csv|replay_csv) dict=-dict=csv.dict ;; esac
	nice -n 19 ./fuzz_$t $dict -max_total_time="$secs" -timeout=10 \
		-rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
		-artifact_prefix=crashes/$t/ work/$t > logs/$t.log 2>&1
	# Keep the inputs that reach new code, small: a merged minimal set.
	nice -n 19 ./fuzz_$t -merge=1 corpus/$t work/$t > logs/$t.merge.log 2>&1
	printf '%s: %s, %s findings\n' "$t" \
		"$(grep -E '^#[0-9]+.*(DONE|pulse)' logs/$t.log | tail -1)" \
		"$(ls crashes/$t | wc -l)"
}
set -- $targets
while [ $# -gt 0 ]; do
	run_one "$1" &
	a=$!
	if [ $# -gt 1 ]; then
		run_one "$2" &
		b=$!
		wait $a $b
		shift 2
	else
		wait $a
		shift
	fi
done
