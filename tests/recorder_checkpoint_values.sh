#!/bin/sh
# memsim record --fake: a checkpoint's tensors copied into a model on the
# host or on the GPU (load_state_dict's copy_, then model.cuda()) keep
# their values for the host, however large, while neither the
# checkpoint's tensor nor the parameter has been written since
# (values.Values._upload): the linear classification of MoCo v3 and
# SimSiam loads a pre-trained encoder, trains a new head and checks that
# every frozen weight's .cpu() still equals the checkpoint's, which
# failed under --fake (a 512 x 512 weight is beyond the shadows' size,
# its values were the rules' 1.0; a 512 x 1024 one, beyond the 1 MiB that
# stays fake on the host, is made real since the host holds its values
# already).  A weight written on the GPU, or a
# checkpoint tensor written on the host, gives the rules' values again.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/lincls.py" <<'PY'
import sys
import torch
from torch import nn

def build():
    return nn.Sequential(nn.Linear(512, 512), nn.BatchNorm1d(512),
                         nn.ReLU(), nn.Linear(512, 1024), nn.ReLU(),
                         nn.Linear(1024, 10))

if sys.argv[1] == "make":
    torch.manual_seed(0)
    torch.save({k: torch.randn_like(v) if v.is_floating_point() else v
                for k, v in build().state_dict().items()}, "ckpt.pt")
    sys.exit(0)
model = build()
model.load_state_dict(torch.load("ckpt.pt", map_location="cpu"))
model.cuda().eval()
for name, p in model.named_parameters():
    p.requires_grad = name.startswith("5.")
opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad],
                      lr=0.1)
x = torch.randn(32, 512, device="cuda")
y = torch.randint(0, 10, (32,), device="cuda")
nn.functional.cross_entropy(model(x), y).backward()
opt.step()
pre = torch.load("ckpt.pt", map_location="cpu")
for k, v in model.state_dict().items():
    if not k.startswith("5."):
        assert (v.cpu() == pre[k]).all(), "%s is changed" % k
print("sanity check passed")
w = model[3].weight.detach().cpu()
print("largest difference", float((w - pre["3.weight"]).abs().max()))
head = nn.Linear(512, 512, bias=False).cuda()
head.load_state_dict({"weight": pre["0.weight"]})
print("copy_ on the GPU", torch.equal(head.weight.detach().cpu(),
                                      pre["0.weight"]))
print("a row", torch.equal(head.weight[7].cpu(), pre["0.weight"][7]))
with torch.no_grad():
    head.weight.mul_(2)
print("written on the GPU", torch.equal(head.weight.detach().cpu(),
                                        pre["0.weight"] * 2))
head.load_state_dict({"weight": pre["0.weight"]})
pre["0.weight"].add_(1)
print("written on the host", torch.equal(head.weight.detach().cpu(),
                                         pre["0.weight"]))
PY
(cd "$tmp" && "$PY" lincls.py make) || fail "the checkpoint"
(cd "$tmp" && $MEMSIM record --fake -o a.csv -- "$PY" lincls.py run) \
	>"$tmp/out" 2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
# (the script's output goes to stderr, memsim record's stdout its own)
printf '%s\n' "sanity check passed" "largest difference 0.0" \
	"copy_ on the GPU True" "a row True" \
	"written on the GPU False" "written on the host False" >"$tmp/want"
grep -v '^memsim record' "$tmp/err" | diff "$tmp/want" - >"$tmp/diff" ||
	fail "the host's values: $(cat "$tmp/diff")"
finish recorder_checkpoint_values.sh
