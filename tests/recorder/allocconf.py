"""The allocator's settings a program sets itself (memsim record --fake,
Recorder.settings): python3 allocconf.py MODE
env:    os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"
        before torch is imported (nanochat's base_train.py, modded-nanogpt)
late:   the same after the first CUDA tensor: PyTorch has read the
        settings by then, the change does nothing
set:    torch.cuda.memory._set_allocator_settings before the first CUDA
        tensor, then other keys after it (PyTorch puts max_split_size_mb
        back to its default then; expandable_segments stays)
Each allocates 12 MiB, frees it, then 20 MiB and 3 MiB."""
import os
import sys

mode = sys.argv[1]
if mode == "env":
    os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"
import torch  # noqa: E402

MiB = 1 << 20
if mode == "set":
    torch.cuda.memory._set_allocator_settings(
        "expandable_segments:True, max_split_size_mb:64")
x = torch.empty(12 * MiB, dtype=torch.uint8, device="cuda")
if mode == "late":
    os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"
if mode == "set":
    torch.cuda.memory._set_allocator_settings(
        "garbage_collection_threshold:0.5,"
        "roundup_power2_divisions:[256:1,512:2,>:4]")
del x
y = torch.empty(20 * MiB, dtype=torch.uint8, device="cuda")
z = torch.empty(3 * MiB, dtype=torch.uint8, device="cuda")
print("done")
