# tests/recorder_hfdatasets.sh: Hugging Face datasets' load_dataset under
# --fake (its Arrow cache written through Python, read back natively)
import sys
import torch
from datasets import load_dataset
ds = load_dataset("json", data_files=sys.argv[1], split="train")
x = torch.tensor([len(r["text"]) for r in ds], device="cuda")
print("rows", len(ds), tuple(x.shape))
