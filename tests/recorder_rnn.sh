#!/bin/sh
# memsim record --fake on nn.LSTM and nn.GRU (traces/memsim_record/rnn.py):
# the tensors of cuDNN's RNN path, in the order RNN.cpp makes them, for
# tests/recorder/rnn_model.py: B=4, T=8, I=16, H=32, 2 layers,
# batch_first, dropout 0.5, on the H200 (132 SMs).  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# sizes CSV: every alloc's size, in order, on one line.
sizes() { awk -F, '$3 == "alloc" { printf "%s%s", s, $5; s = " " } END { print "" }' "$1"; }
for c in lstm gru_amp bf16; do
	$MEMSIM record -o "$tmp/$c.csv" -- "$PY" "$SRC/recorder/rnn_model.py" $c \
		2>"$tmp/err" || fail "record $c: $(tail -3 "$tmp/err")"
done
# 1. LSTM, fp32.  The 8 parameters (4H x I, 4H x H, 4H, 4H floats a
# layer: 8192 16384 512 512, then 16384 16384 512 512), then
# flatten_parameters' one buffer of them all (59392), the old ones freed.
# Forward: x (2048), h0 and c0 (2*4*32*4 = 1024 each), get_dropout_state's
# 8-byte scalar and the dropout states (48 KiB per SM: 6488064), x made
# (T, B, I)-contiguous (2048), output (T*B*H*4 = 4096), hy, cy (1024), the
# workspace (2 layers * 8 MiB + the weight space 59392 + B*s*(T*21.51*H
# + 8.24*H) = 92323, the small-H rule, + one layer output 4096 for the
# dropout = 16933027) and the reserve (4096*(6*2-1)
# + 256 + 8*4*32 dropout bits = 45440).  Backward: the loss and its
# gradient, zeros for the unused grad_hy and grad_cy, backward-data's x
# and grad_output copies, dx, dhx, dcx and workspace, backward-weight's
# x copy, dw (one buffer: the weights' gradients are its views) and
# workspace.
got=$(sizes "$tmp/lstm.csv")
want="8192 16384 512 512 16384 16384 512 512 59392 2048 1024 1024 8 6488064 2048 4096 1024 1024 16933027 45440 4 4 1024 1024 2048 4096 2048 1024 1024 16933027 2048 59392 16933027"
[ "$got" = "$want" ] || fail "lstm: $got"
grep -q ',backward CudnnRnnBackward$' "$tmp/lstm.csv" || fail "lstm: no cuDNN backward"
# _cudnn_rnn frees its workspace on return, after the reserve was made
# (the H200 snapshot of the word_language_model LSTM, docs/corpus.md):
# forward's workspace row, the reserve's, then the workspace's free.
got=$(awk -F, '$8 == "cudnn _cudnn_rnn workspace" && $3 == "alloc" { a = $4; n = NR }
	n && NR == n + 1 { r = $3 "," $5 }
	n && NR == n + 2 { print r, $3, ($4 == a) ? "workspace" : "other"; n = 0 }' \
	"$tmp/lstm.csv")
[ "$got" = "alloc,45440 free_completed workspace" ] || fail "lstm order: $got"
# 2. GRU under fp16 autocast (_cudnn_rnn_cast_reflatten): the weights
# copied into a new fp16 flat buffer (44544 / 2 = 22272), hx then the
# input cast (512, 1024), then _cudnn_rnn in fp16 (x 1024, output 2048,
# hy 512, workspace 2*8 MiB + 22272 + int(4*2*(8*19.35*32 + 6.02*32))
# + 2048 = 16842705,
# reserve 2048*(7*2-1) + 256 + 128 = 27008).  Backward ends with each
# weight's fp16 gradient cast back to fp32, last parameter first.
got=$(sizes "$tmp/gru_amp.csv")
want="6144 12288 384 384 12288 12288 384 384 44544 2048 1024 8 6488064 22272 512 1024 1024 2048 512 16842705 27008 4096 4 4 2048 512 1024 2048 1024 512 16842705 1024 22272 16842705 384 384 12288 12288 384 384 12288 6144"
[ "$got" = "$want" ] || fail "gru_amp: $got"
# 3. bf16 weights: torch.backends.cudnn.is_acceptable() refuses bf16, so
# flatten_parameters leaves them apart and each call copies them into a
# new buffer (12800 bytes), after output and hy/cy: x 1024, h0 c0 256,
# output 2048, hy cy 256, buffer, workspace 8 MiB + 12800 + 5*2048
# = 8411648 (bf16: the large-H rule), reserve (train mode, no dropout) 2048*5 + 256 = 10496.
got=$(sizes "$tmp/bf16.csv")
want="4096 8192 256 256 1024 256 256 2048 256 256 12800 8411648 10496"
[ "$got" = "$want" ] || fail "bf16: $got"
# 4. The rules against the H200's grids: tests/data/record/rnn_ws.tsv (316
# calls, H 64..2048, three dtypes, bidirectional too): the reserve exact
# for every call; the workspace's median error and the calls within 10%;
# rnn_ws_small.tsv (600 calls, H 16..256, fp32 and fp16, dropout): the
# workspace's median error and the calls within 2% (docs/recording.md
# quotes these); of its 105 single-step calls (T = 1: the x-transformers
# parity program's GRU runs on B*4 rows of one step), those within 1%
# (the per-sequence term C of rnn.py's SMALL_H: 92 without it);
# rnn_ws_bidir.tsv (400 shapes, each unidirectional and bidirectional,
# H 16..512): the same; rnn_step.tsv (108 calls, 1 to 8 steps of 256 to
# 4096 rows, one layer): the same, and the calls whose backward's largest
# freed block is the forward's workspace (rnn.py gives backward that
# size; the others, at H = 192, free less).  SMALL_H is fitted on
# rnn_ws_small.tsv and rnn_step.tsv together (1.51%, 69 within 2%, 10 of
# 54 single-step ones within 1% on rnn_step.tsv with the constants fitted
# on rnn_ws_small.tsv alone).
DATA=${MSIM_TESTDATA:-tests/data}/record
PYTHONPATH="$SRC/../traces" python3 - "$DATA/rnn_ws.tsv" "$DATA/rnn_ws_small.tsv" \
	"$DATA/rnn_ws_bidir.tsv" "$DATA/rnn_step.tsv" \
	>"$tmp/grid" 2>&1 <<'PY' ||
import sys
from memsim_record import rnn
mode = {"LSTM": "lstm", "GRU": "gru", "RNN": "rnn_tanh"}
for path in sys.argv[1:]:
    bad = n = within10 = within2 = 0
    errs = []
    t1 = t1within1 = bsame = 0
    for line in open(path):
        if line.startswith("#"):
            continue
        f = line.split()
        if f[0] == "mode":
            col = {k: j for j, k in enumerate(f)}
            continue
        v = {k: f[j] for k, j in col.items()}
        m, dt = v["mode"], v["dtype"]
        i, h, l, b, t = (int(v[k]) for k in ("I", "H", "L", "B", "T"))
        d = 2 if v.get("bi") == "1" else 1
        s = 4 if dt == "fp32" else 2
        drop = float(v.get("dropout", 0)) > 0 and l > 1
        n += 1
        if "reserve" in v:
            bad += rnn.reserve_bytes(mode[m], t, b, h, l, d, s, False) != \
                int(v["reserve"])
        ws = v["workspace"]
        if "backward" in v:
            bsame += v["backward"] == ws
        w = rnn.weight_space_bytes(mode[m], i, h, l, d, s)
        e = rnn.workspace_bytes(mode[m], t, b, i, h, l, d, s, drop, w,
                                dt == "bf16") / int(ws) - 1
        errs.append(abs(e))
        within10 += abs(e) <= 0.1
        within2 += abs(e) <= 0.02
        if t == 1:
            t1 += 1
            t1within1 += abs(e) <= 0.01
    errs.sort()
    print("n=%d reserve-mismatch=%d median=%.3f within10=%d within2=%d "
          "T=1: %d within1=%d" % (n, bad, errs[len(errs) // 2], within10,
                                  within2, t1, t1within1) +
          (" backward-same=%d" % bsame if "backward" in col else ""))
PY
	fail "grid: $(cat "$tmp/grid")"
printf '%s\n' "n=316 reserve-mismatch=0 median=0.013 within10=277 within2=184 T=1: 47 within1=27" \
	"n=600 reserve-mismatch=0 median=0.002 within10=599 within2=566 T=1: 105 within1=100" \
	"n=800 reserve-mismatch=0 median=0.004 within10=776 within2=640 T=1: 158 within1=117" \
	"n=108 reserve-mismatch=0 median=0.005 within10=108 within2=103 T=1: 54 within1=43 backward-same=84" >"$tmp/want"
cmp -s "$tmp/want" "$tmp/grid" || fail "grid: $(cat "$tmp/grid")"

# pack_padded_sequence of a GPU batch: the output's rows are the host
# lengths' sum, which the fake mode could not know
# (DynamicOutputShapeException); ATen's _pack_padded_sequence now runs on
# the fake input (dispatch.py), and enforce_sorted=False's indices
# (invert_permutation's scatter_ along a permutation) keep their values.
# The output of tests/recorder/packed_sequence.py on the H200 (PyTorch
# 2.11, 3 December 2026), line for line, the packing's memory included.
$MEMSIM record --fake -o "$tmp/pack.csv" -- "$PY" \
	"$SRC/recorder/packed_sequence.py" >"$tmp/out" 2>"$tmp/err" ||
	fail "packed sequence: $(tail -3 "$tmp/err")"
grep -E '^(pack|packed|padded|grad) ' "$tmp/err" >"$tmp/pk"
diff "$DATA/packed_sequence.h200.txt" "$tmp/pk" >"$tmp/diff" ||
	fail "packed sequence differs from the H200's: $(cat "$tmp/diff")"

finish recorder_rnn.sh
