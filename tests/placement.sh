#!/bin/sh
# Where the driver puts segments decides PyTorch's best-fit ties, and so
# the peaks (docs/fidelity.md, "Segment placement and lazy module loading").  Real
# H200 runs (tests/data/placement/real.tsv) recorded with memsim record
# --gpu:
# - with CUDA_MODULE_LOADING=EAGER, `memsim run` with modelled placement
#   gives the real peaks;
# - with lazy loading (CUDA's default), modules loaded mid-run take device
#   memory between PyTorch's segments: modelled placement misses the real
#   peak reserved of unet128, and --recording (the recorded addresses)
#   gives it exactly.
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}/placement
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
json() { $MEMSIM run "$@" --json | sed -n 's/^ *"\(allocated_bytes.all.peak\|reserved_bytes.all.peak\)": \([0-9]*\),*$/\2/p' | tr '\n' ' '; }

rows=$(mktemp /tmp/memsim-placement-XXXXXX)
trap 'rm -f "$rows"' EXIT
grep -v '^#' "$DATA/real.tsv" | tail -n +2 >"$rows"
n=0
while IFS='	' read -r trace loading alloc res; do
	n=$((n + 1))
	got=$(json --recording "$DATA/$trace")
	[ "$got" = "$alloc $res " ] || fail "$trace --recording: $got, real $alloc $res"
	got=$(json "$DATA/$trace")
	case $loading in
	EAGER) [ "$got" = "$alloc $res " ] ||
		fail "$trace modelled placement: $got, real $alloc $res" ;;
	LAZY) [ "$got" != "$alloc $res " ] ||
		fail "$trace: modelled placement now matches lazy" \
		     "loading; update docs/fidelity.md" ;;
	esac
done <"$rows"
[ "$n" -eq 3 ] || fail "read $n rows, expected 3"
[ $fails -eq 0 ] && echo "placement: all checks passed"
exit $fails
