#!/bin/sh
# memsim record --fake on what the vision programs of the corpus (torchvision,
# timm) met first (docs/recording-boundary.md): a CUDA build's own
# torch.version.cuda and cuDNN version stand under the fake (torchvision
# refuses to import when torch.version.cuda is not the CUDA it was built
# with), and a checkpoint saver's moves of the files it wrote (timm's
# CheckpointSaver: torch.save to tmp, os.replace to last, os.link to the
# best, os.remove of old ones) act on their scratch copies while the user's
# files stay as they were.  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch

# A CUDA build (here made to look like one before the recorder starts, by
# a sitecustomize on PYTHONPATH): its version answers stand; a CPU build
# gets the fake's (devices.CUDA_VERSION).
mkdir -p "$tmp/site"
cat >"$tmp/site/sitecustomize.py" <<'PY'
import os
if os.environ.get("FAKE_CUDA_BUILD"):
    import torch
    torch.version.cuda = "13.0"
PY
cat >"$tmp/ver.py" <<'PY'
import torch
x = torch.zeros(4, device="cuda")
print("cuda", torch.version.cuda, torch.cuda.is_available())
PY
FAKE_CUDA_BUILD=1 PYTHONPATH="$tmp/site" $MEMSIM record -o "$tmp/ver.csv" -- "$PY" "$tmp/ver.py" >"$tmp/out" 2>&1 ||
	fail "version: $(tail -3 "$tmp/out")"
grep -q "^cuda 13.0 True$" "$tmp/out" ||
	fail "a CUDA build's torch.version.cuda replaced: $(grep '^cuda' "$tmp/out")"
real=$("$PY" -c 'import torch; print(torch.version.cuda)')
if [ "$real" = None ]; then
	$MEMSIM record -o "$tmp/ver.csv" -- "$PY" "$tmp/ver.py" >"$tmp/out" 2>&1 ||
		fail "version, CPU build: $(tail -3 "$tmp/out")"
	grep -q "^cuda 12.8 True$" "$tmp/out" ||
		fail "a CPU build's torch.version.cuda under --fake: $(grep '^cuda' "$tmp/out")"
fi

# cudnn.benchmark (dcgan): the first call of each convolution key in a
# thread runs cuDNN's find (run_single_conv: the find's workspace, freed,
# emptyCache, then the chosen plan's), whose workspace is cuDNN's largest
# candidate plan, not modelled: one assumption a key and thread (forward,
# backward-data, backward-weight of the batch of 4; the forward of the
# batch of 2), none on later calls, none without benchmark.
cat >"$tmp/bench.py" <<'PY'
import sys, torch
torch.backends.cudnn.benchmark = sys.argv[1] == "on"
c = torch.nn.Conv2d(16, 16, 3, padding=1).cuda()
x = torch.randn(4, 16, 32, 32, device="cuda", requires_grad=True)
for _ in range(3):
    c(x).sum().backward()
c(torch.randn(2, 16, 32, 32, device="cuda"))
PY
for b in on off; do
	$MEMSIM record -o "$tmp/bench-$b.csv" -- "$PY" "$tmp/bench.py" $b >"$tmp/out-$b" 2>&1 ||
		fail "benchmark $b: $(tail -3 "$tmp/out-$b")"
done
# said once, and only with benchmark on: the peaks are a lower bound
n=$(grep -c "^memsim record: note: torch.backends.cudnn.benchmark is on: .*lower bound" "$tmp/out-on")
[ "$n" -eq 1 ] || fail "cudnn.benchmark: $n notes: $(cat "$tmp/out-on")"
! grep -q 'note: torch.backends.cudnn.benchmark' "$tmp/out-off" ||
	fail "cudnn.benchmark off: a note"
n=$(grep -c ',assumption,cudnn:benchmark-find' "$tmp/bench-on.csv")
[ "$n" -eq 4 ] || fail "cudnn.benchmark: $n find assumptions, expected 4"
n=$(grep -c ',assumption,cudnn:benchmark-find' "$tmp/bench-off.csv")
[ "$n" -eq 0 ] || fail "no cudnn.benchmark: $n find assumptions, expected 0"
grep -q 'cudnn run_conv_plan' "$tmp/bench-on.csv" ||
	fail "cudnn.benchmark: the plans' workspaces gone"
# The batch of 4's workspaces (x + w + y + 16 = 262144 + 9216 + 262144
# + 16, forward, backward-data and backward-weight alike): each find
# allocates its largest candidate and frees it, empties the cache, then
# the plan allocates its own; later calls only the plan (3 steps: 3 + 3
# + 3 of 533520; the batch of 2, 131072 + 9216 + 131072 + 16: 1 of
# 271376).  The finds' largest candidates are cuDNN's FFT engines
# (Dispatch._find_fft): forward kernels.fft_forward, the weight and
# max(N*16 + 256, N*16) tiles of 64 x 33 x 16 bytes (10,822,656 at 4
# images, 9,741,312 at 2); backward-data kernels.fft_data, 4352 bytes
# times 16*16 + 2 (4*16 + 4*16) (a padded side of 34); backward-weight
# kernels.fft_weight, the output gradient, 262144, and max(4*16 + 4*16,
# 16*16) tiles of 64 x 33 x 16 bytes.  No emptyCache without benchmark.
n=$(grep -c ',alloc,[0-9]*,533520,' "$tmp/bench-on.csv")
[ "$n" -eq 9 ] || fail "cudnn.benchmark: $n workspaces of 533520, expected 9"
for f in 10822656 9741312 2228224 8912896; do
	n=$(grep -c ",alloc,[0-9]*,$f," "$tmp/bench-on.csv")
	[ "$n" -eq 1 ] || fail "cudnn.benchmark: $n finds of $f, expected 1"
done
n=$(grep -c ',alloc,[0-9]*,271376,' "$tmp/bench-on.csv")
[ "$n" -eq 1 ] || fail "cudnn.benchmark: $n workspaces of 271376, expected 1"
n=$(grep -c ',alloc,[0-9]*,533520,' "$tmp/bench-off.csv")
[ "$n" -eq 9 ] || fail "no cudnn.benchmark: $n workspaces of 533520, expected 9"
n=$(grep -c ',empty_cache,' "$tmp/bench-on.csv")
[ "$n" -eq 4 ] || fail "cudnn.benchmark: $n emptyCache rows, expected 4"
n=$(grep -c ',empty_cache,' "$tmp/bench-off.csv")
[ "$n" -eq 0 ] || fail "no cudnn.benchmark: $n emptyCache rows"
# the first forward's rows in order: find, its free, emptyCache, the plan
awk -F, '$3 == "empty_cache" || ($3 ~ /^(alloc|free_completed)$/ &&
	($5 == 533520 || $5 == 10822656)) { print $3, $5 }' "$tmp/bench-on.csv" |
	head -5 >"$tmp/seq"
printf '%s\n' "alloc 10822656" "free_completed 10822656" "empty_cache 0" \
	"alloc 533520" "free_completed 533520" | cmp -s - "$tmp/seq" ||
	fail "cudnn.benchmark: the first find: $(tr '\n' ';' <"$tmp/seq")"
# The cache is the thread's: a transposed convolution's forward (the main
# thread) and a convolution's backward-data (the autograd engine's
# thread) of one key each find it; a second forward does not.
cat >"$tmp/bench2.py" <<'PY'
import torch
torch.backends.cudnn.benchmark = True
c = torch.nn.Conv2d(8, 16, 3, padding=1).cuda()
t = torch.nn.ConvTranspose2d(16, 8, 3, padding=1).cuda()
x = torch.randn(4, 8, 32, 32, device="cuda", requires_grad=True)
t(torch.randn(4, 16, 32, 32, device="cuda"))
t(torch.randn(4, 16, 32, 32, device="cuda"))
c(x).sum().backward()
PY
$MEMSIM record -o "$tmp/bench2.csv" -- "$PY" "$tmp/bench2.py" >"$tmp/out" 2>&1 ||
	fail "benchmark, threads: $(tail -3 "$tmp/out")"
n=$(grep -c ',assumption,cudnn:benchmark-find' "$tmp/bench2.csv")
[ "$n" -eq 4 ] || fail "cudnn.benchmark, threads: $n finds, expected 4"

# A checkpoint saver's moves, in a folder holding a user's file.
mkdir -p "$tmp/w"
echo keep >"$tmp/w/user.txt"
cat >"$tmp/w/ck.py" <<'PY'
import os, torch
m = torch.nn.Linear(4, 4).cuda()
os.makedirs("ck", exist_ok=True)
for epoch in range(2):
    torch.save({"w": m.state_dict(), "epoch": epoch}, "ck/tmp.pth")
    if os.path.exists("ck/last.pth"):
        os.unlink("ck/last.pth")
    os.replace("ck/tmp.pth", "ck/last.pth")
    assert not os.path.exists("ck/tmp.pth")
    os.link("ck/last.pth", "ck/ep%d.pth" % epoch)
    print("saved", epoch, os.stat("ck/ep%d.pth" % epoch).st_size > 0,
          os.path.isfile("ck/last.pth"))
os.remove("ck/ep0.pth")
print("ep0", os.path.exists("ck/ep0.pth"), "ep1", os.path.exists("ck/ep1.pth"))
sd = torch.load("ck/ep1.pth", map_location="cuda")
print("loaded", sd["epoch"], tuple(sd["w"]["weight"].shape), sd["w"]["weight"].device)
# fsspec's transaction (Lightning's checkpoints): a file written, moved
# onto the target, then its mode and times set there
with open("ck/part.tmp", "wb") as f:
    torch.save(m.state_dict(), f)
import shutil
shutil.move("ck/part.tmp", "ck/model.ckpt")
os.chmod("ck/model.ckpt", 0o644)
os.utime("ck/model.ckpt")
print("commit", os.access("ck/model.ckpt", os.R_OK), oct(os.stat("ck/model.ckpt").st_mode & 0o777))
os.rename("user.txt", "user2.txt")
print("user", os.path.exists("user.txt"), open("user2.txt").read().strip())
os.remove("user2.txt")
print("user2", os.path.exists("user2.txt"))
PY
(cd "$tmp/w" && $MEMSIM record -o "$tmp/ck.csv" -- "$PY" ck.py) >"$tmp/out" 2>&1 ||
	fail "checkpoint moves: $(tail -3 "$tmp/out")"
for want in "saved 0 True True" "saved 1 True True" "ep0 False ep1 True" \
	"loaded 1 (4, 4) cuda:0" "commit True 0o644" "user False keep" "user2 False"; do
	grep -q "^$want$" "$tmp/out" || fail "checkpoint moves: no '$want' in: $(head -8 "$tmp/out")"
done
# the user's folder: the script and user.txt as they were, nothing else
# (the folder the script made, empty for real, removed at the end)
[ "$(cat "$tmp/w/user.txt")" = keep ] || fail "user.txt changed"
[ "$(cd "$tmp/w" && find . | sort | tr '\n' ' ')" = ". ./ck.py ./user.txt " ] ||
	fail "the user's folder changed: $(cd "$tmp/w" && find . | sort | tr '\n' ' ')"
finish recorder_vision
