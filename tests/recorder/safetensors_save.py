# tests/recorder_safetensors.sh: safetensors' save_file of a CUDA model's
# state_dict under --fake (transformers' save_pretrained: a Trainer's
# checkpoints), then load_file of it, in the working directory.
import torch
import torch.nn as nn
from safetensors.torch import save_file, load_file, save_model

m = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8)).cuda()
m[2].half()   # two dtypes: float32 and float16 tensors in one file
save_file(m.state_dict(), "m.safetensors", metadata={"format": "pt"})
back = load_file("m.safetensors")
print("loaded", sorted((k, tuple(v.shape), str(v.dtype)) for k, v in back.items()))
print("zeros", all(bool((v == 0).all()) for v in back.values()))
t = nn.Linear(8, 8).cuda()
tied = nn.Sequential(t, nn.Linear(8, 8).cuda())
tied[1].weight = t.weight
save_model(tied, "tied.safetensors")
print("tied", sorted(load_file("tied.safetensors")))
