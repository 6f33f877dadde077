#!/bin/sh
# memsim record --fake: torch.load of a pickled nn.Module (yolov7's
# checkpoints hold the whole Model) onto the GPU keeps the values of its
# parameters as of its plain tensors.  torch.load makes a Parameter of its
# loaded data (torch._utils._rebuild_parameter: Parameter(data,
# requires_grad), a new tensor on data's storage) while the recorder has
# the fake mode set aside (host._Load), so no op told it: the
# parameters' values were unknown, and everything computed from them
# (yolov7's test.py and detect.py: the scores their NMS keeps) went by
# assumption, under --values cpu too.  Needs Python 3 and PyTorch;
# skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" "$SRC/recorder/load_param.py" save "$tmp/m.pt" || fail "save"
for v in rules cpu; do
	$MEMSIM record --values $v -o "$tmp/l.csv" -- "$PY" \
		"$SRC/recorder/load_param.py" load "$tmp/m.pt" >"$tmp/err" 2>&1 ||
		fail "record ($v): $(tail -3 "$tmp/err")"
	grep -v '^memsim record' "$tmp/err" >"$tmp/printed"
	printf 'True 1024 8\n1024\n' >"$tmp/want"
	cmp -s "$tmp/printed" "$tmp/want" ||
		fail "--values $v printed: $(cat "$tmp/printed")"
	grep -q annotate "$tmp/l.csv" &&
		fail "--values $v: $(grep annotate "$tmp/l.csv" | cut -d, -f8 | head -3)"
done
finish recorder_load_param.sh
