#!/bin/sh
# memsim record --fake: cudnn.benchmark's find of a 1-d convolution.
# PyTorch runs it as 2-d of height 1, and its find has the 2-d rules'
# FFT candidates (kernels.fft_forward for a "same" forward, fft_weight
# for backward-weight) wherever they fit: generate_and_filter_plans
# keeps the plans whose workspace is at most get_available_workspace(),
# the caching allocator's cacheInfo() (at least cudaMemGetInfo's free
# memory), and over a long sequence the FFT asks for hundreds of GB.
# The recording had the chosen plan's alone for every 1-d convolution.
# Checked against the finds of a real run of HiFi-GAN's training on an
# H100 80GB (tests/data/record/hifigan_finds_h100.tsv): its multi-scale
# discriminator (batch 16, 8192 samples, mean-pooled to 4097 and 2049
# for the next two scales) recorded with --device h100-80gb has six
# finds of 1 GB or more, the last two layers' at the three scales (a
# kernel-5 1024-channel layer at 33 samples, forward 36,008,099,840
# bytes and backward-weight 35,435,642,880; the 1024 -> 1 kernel-3 one
# at 128 and 65: 9,198,120,960, 8,665,505,792, 2,317,365,248 and
# 2,183,172,160), each one of the H100's; the kernel-5 layer's FFTs at
# 128 and 65 samples (563 and 142 GB forward) are left out, as on the
# H100.  On an L4 (24 GB) the 36 GB ones are left out too.  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/msd.py" <<'PY'
import torch
from torch import nn
torch.backends.cudnn.benchmark = True

class DiscriminatorS(nn.Module):
    # HiFi-GAN's scale discriminator (its models.py, weight_norm left out)
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([
            nn.Conv1d(1, 128, 15, 1, padding=7),
            nn.Conv1d(128, 128, 41, 2, groups=4, padding=20),
            nn.Conv1d(128, 256, 41, 2, groups=16, padding=20),
            nn.Conv1d(256, 512, 41, 4, groups=16, padding=20),
            nn.Conv1d(512, 1024, 41, 4, groups=16, padding=20),
            nn.Conv1d(1024, 1024, 41, 1, groups=16, padding=20),
            nn.Conv1d(1024, 1024, 5, 1, padding=2)])
        self.conv_post = nn.Conv1d(1024, 1, 3, 1, padding=1)

    def forward(self, x):
        for c in self.convs:
            x = nn.functional.leaky_relu(c(x), 0.1)
        return self.conv_post(x).flatten(1, -1)

ds = nn.ModuleList([DiscriminatorS() for _ in range(3)]).cuda()
pool = nn.AvgPool1d(4, 2, padding=2)
y = torch.randn(16, 1, 8192, device="cuda")
loss = 0
for i, d in enumerate(ds):
    if i:
        y = pool(y)
    loss = loss + d(y).mean()
loss.backward()
PY
finds() {
	$MEMSIM record --fake --device "$1" -o "$tmp/$1.csv" -- "$PY" \
		"$tmp/msd.py" >"$tmp/err" 2>&1 || fail "record $1: $(tail -3 "$tmp/err")"
	awk -F, '$3 == "alloc" && $5 >= 1000000000 { print $5 }' "$tmp/$1.csv"
}
finds h100-80gb >"$tmp/h100"
[ "$(tr '\n' ' ' <"$tmp/h100")" = "9198120960 2317365248 36008099840 \
35435642880 2183172160 8665505792 " ] ||
	fail "the H100's finds: $(tr '\n' ' ' <"$tmp/h100")"
while read -r size; do
	grep -q "	$size	" "$MSIM_TESTDATA/record/hifigan_finds_h100.tsv" ||
		fail "$size is not a find of the H100's"
done <"$tmp/h100"
finds l4 >"$tmp/l4"
[ "$(tr '\n' ' ' <"$tmp/l4")" = "9198120960 2317365248 2183172160 \
8665505792 " ] || fail "the L4's finds: $(tr '\n' ' ' <"$tmp/l4")"
finish recorder_conv1d_find.sh
