#!/bin/sh
# Run corpus programs (programs.tsv), each in a scratch working directory
# with its synthetic data, and leave per program, in OUTDIR:
#   NAME.log   its output (the setup's too)
#   NAME.rc    its exit status (128+N: killed by signal N; 124: timed out)
#   NAME.csv   the trace (MODE fake: memsim record --fake)
#   NAME.real  "ALLOCATED RESERVED", torch.cuda.max_memory_allocated() and
#              max_memory_reserved() at its end (MODE real: on a GPU)
#   NAME.pickle  with CORPUS_SNAPSHOTS=1 in MODE real: the allocator's
#              history (torch.cuda.memory._dump_snapshot, see wrap.py)
#
#   sh tests/corpus/run.sh fake|real OUTDIR [NAME...]
#
# MODE fake needs $MEMSIM (memsim) and $PY (the Python with PyTorch,
# default $MEMSIM_PYTHON or python3); MODE real needs only $PY.  With no
# NAME, every program.  CORPUS_TIMEOUT: seconds a program may run (1800:
# makeMoE needs about 380 s of CPU, which a loaded machine spreads over
# more wall time, 814 s here with other jobs; only a program that hangs
# waits so long).
set -u
mode=$1 out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-${MEMSIM_PYTHON:-python3}}
MEMSIM=${MEMSIM:-memsim}
case $mode in fake|real) ;; *) echo "run.sh: MODE is fake or real, not '$mode'" >&2; exit 2;; esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
# No program may reach the network: models from their configs only.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export WANDB_MODE=disabled MPLBACKEND=Agg PYTHONUNBUFFERED=1
# Nothing written into the source tree (the vendored modules are imported
# from it).
export PYTHONDONTWRITEBYTECODE=1
tab=$(printf '\t')
grep -v '^#' "$here/programs.tsv" | while IFS=$tab read -r name data needs setup cmd; do
	[ -n "$name" ] || continue
	if [ $# -gt 0 ]; then
		want=0
		for n in "$@"; do [ "$n" = "$name" ] && want=1; done
		[ $want -eq 1 ] || continue
	fi
	d=$out/$name.d
	rm -rf "$d" && mkdir -p "$d"
	log=$out/$name.log
	: >"$log"
	rm -f "$out/$name.csv" "$out/$name.real" "$out/$name.rc"
	(
		cd "$d" || exit 1
		# Inductor's caches (its pad_mm and autotuning decisions among
		# them) of this program alone, empty: a compiled program
		# benchmarks as on a fresh machine, whichever programs ran
		# before it (the recorder assumes a cold cache,
		# docs/recording-compile.md)
		TORCHINDUCTOR_CACHE_DIR=$d/inductor-cache
		# Hugging Face's caches (the hub's models, the datasets library's
		# datasets) of this program alone: what mkdata.py's hf-* kinds
		# leave there, never the machine's own
		HF_HOME=$d/hf-home
		export TORCHINDUCTOR_CACHE_DIR HF_HOME
		if [ "$data" != - ]; then
			# shellcheck disable=SC2086
			"$PY" "$here/mkdata.py" . $data >>"$log" 2>&1 || exit 1
		fi
		if [ "$setup" != - ]; then
			# shellcheck disable=SC2046
			echo "setup: $setup" >>"$log"
			"$PY" $(echo "$setup" | sed "s|%C%|$here|g") >>"$log" 2>&1 || exit 1
		fi
		# shellcheck disable=SC2046
		# CORPUS_SED: a sed script on the command (tests/corpus/
		# symbolic.sh sets a batch size so); CORPUS_RECORD: more options
		# of memsim record (--symbolic B=V)
		set -- $(echo "$cmd" | sed "s|%C%|$here|g" | sed "${CORPUS_SED:-}")
		start=$(date +%s)
		if [ "$mode" = fake ]; then
			# shellcheck disable=SC2086
			timeout "${CORPUS_TIMEOUT:-1800}" "$MEMSIM" record --fake \
				${CORPUS_RECORD:-} \
				-o "$out/$name.csv" -- "$PY" "$here/wrap.py" "$@" >>"$log" 2>&1
		else
			snap=
			[ -n "${CORPUS_SNAPSHOTS:-}" ] && snap=$out/$name.pickle
			CORPUS_SNAPSHOT=$snap CORPUS_REAL=$out/$name.real timeout "${CORPUS_TIMEOUT:-1800}" \
				"$PY" "$here/wrap.py" "$@" >>"$log" 2>&1
		fi
		rc=$?
		echo "$name: exit $rc after $(($(date +%s) - start)) s" >>"$log"
		exit $rc
	) </dev/null
	echo $? >"$out/$name.rc"
	echo "$name $(cat "$out/$name.rc")"
	rm -rf "$d"
done
