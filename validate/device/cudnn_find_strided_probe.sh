#!/bin/sh
# Where cuDNN's stride-2 backward-data FFT (kernels.fft_data_strided) is a
# candidate of cudnn.benchmark's find, on a GPU machine: the gaps that
# kernels.strided_fft_candidate's bounds lie in (K*C from 8,192 to
# 32,768, N*H*W from 4,096 to 13,312, where nothing was measured), fp32
# NCHW 3x3 and 4x4 layers of padding 1, each in a thread of its own
# (cudnn_find_probe.py, FIND_LIST).
#   sh validate/device/cudnn_find_strided_probe.sh OUTDIR
# OUTDIR/find.jsonl: each layer's find (the data phase's first call) and
# chosen plan; a find equal to kernels.fft_data_strided's bytes is the
# FFT, one within a few MB of the plan is not.  Run on an H100 on
# 2026-12-07: tests/data/record/cudnn_find_strided_h100.tsv.
set -u
o=$1; mkdir -p "$o"
here=$(cd "$(dirname "$0")" && pwd)
L=
add() { L="$L$1;"; }
# K*C 32768 (128 -> 256): N*H*W 2048 to 24576 at 16 x 16, then other sides
for n in 8 16 20 24 32 40 48 52 64 96; do add "$n,128,256,16,3,1,2"; done
for n in 64 96 128 192 256; do add "$n,128,256,8,3,1,2"; done
for n in 2 4 8 16; do add "$n,128,256,32,3,1,2"; done
for n in 1 2; do add "$n,128,256,64,3,1,2"; done
# K*C 16384 (128 -> 128, a ResNet-50's; 64 -> 256) and 8192 (64 -> 128)
for n in 16 32 64 128; do add "$n,128,128,16,3,1,2"; done
for n in 4 16; do add "$n,128,128,56,3,1,2"; done
for n in 32 64; do add "$n,64,256,16,3,1,2"; done
for n in 64 128; do add "$n,64,128,32,3,1,2"; done
# K*C 65536 and more (256 -> 256, 256 -> 512, 4x4 kernels as DCGAN's)
for n in 64 128 192 256; do add "$n,256,256,8,3,1,2"; done
for n in 16 32 64; do add "$n,256,256,16,3,1,2"; done
for n in 8 16 32 64; do add "$n,256,512,16,4,1,2"; done
for n in 8 16 32 64; do add "$n,128,256,16,4,1,2"; done
OUT=$o FIND_LIST=$L FIND_BUDGET=${FIND_BUDGET:-400} \
	timeout 480 python3 "$here/cudnn_find_probe.py" >"$o/probe.log" 2>&1
echo "probe: exit $? ($(wc -l <"$o/find.jsonl" 2>/dev/null || echo 0) layers)"
