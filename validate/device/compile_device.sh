#!/bin/sh
# The real runs of tests/data/compile (H200, torch 2.11 with triton, one
# call of the device machine, the four runs side by side):
#   sh validate/device/compile_device.sh OUTDIR
# then `memsim convert OUTDIR/NAME.csv tests/data/compile/NAME.real.bin`.
# The call itself ran a copy of tests/recorder/gpt_compile.py (its code,
# without the 3 comment lines) written by a heredoc (the device machine
# gets the lead's checkout, not this branch's); gd, gr, ge, sd there are
# gpt2_default,
# gpt2_reduce_overhead, gpt2_eager and small_default here.  The
# TORCH_LOGS=output_code logs hold Inductor's generated wrapper code (its
# buffers, "del buf" and "# reuse" lines), which docs/recording-compile.md
# compares with the recorder's model.
out=${1:?OUTDIR}
cd "$(dirname "$0")/../.." || exit 1
export PYTHONPATH=$PWD/traces PYTHONUNBUFFERED=1
S=tests/recorder/gpt_compile.py
r() {
	n=$1; shift
	TORCHINDUCTOR_CACHE_DIR=/tmp/i$n python3 -m memsim_record --gpu \
		-o "$out/$n.csv" -- $S "$@" >"$out/$n.log" 2>&1
	echo "$n"; tail -2 "$out/$n.log"
}
TORCH_LOGS=output_code r gpt2_default 8 512 12 768 50304 3 default &
r gpt2_reduce_overhead 8 512 12 768 50304 3 reduce-overhead &
r gpt2_eager 8 512 12 768 50304 3 eager &
TORCH_LOGS=output_code r small_default 4 64 2 128 1024 2 default &
wait
