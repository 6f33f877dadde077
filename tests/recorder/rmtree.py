# tests/recorder_rmtree.sh: shutil.rmtree of a folder holding the user's
# files and files the recording wrote (Hugging Face Trainer's
# _rotate_checkpoints, save_total_limit), then the folder made again.
import os
import shutil
import tempfile
import torch

m = torch.nn.Linear(4, 4).cuda()
torch.save(m.state_dict(), "out/checkpoint-2/model.pt")
shutil.rmtree("out/checkpoint-1", ignore_errors=True)
shutil.rmtree("out/checkpoint-2")
print("gone", os.path.exists("out/checkpoint-1"),
      os.path.exists("out/checkpoint-1/model.pt"),
      os.path.exists("out/checkpoint-2/model.pt"))
try:
    shutil.rmtree("out/checkpoint-1")
    print("again removed")
except FileNotFoundError:
    print("again FileNotFoundError")
shutil.rmtree("out/checkpoint-1", ignore_errors=True)
os.makedirs("out/checkpoint-1", exist_ok=True)
torch.save(m.state_dict(), "out/checkpoint-1/model.pt")
print("remade", os.path.isdir("out/checkpoint-1"),
      len(torch.load("out/checkpoint-1/model.pt")))
# folders the script made itself (a TemporaryDirectory, os.makedirs) are
# removed for real, as are files written into them natively
with tempfile.TemporaryDirectory() as t:
    with open(os.path.join(t, "x"), "w") as f:
        f.write("1")
    fd = os.open(os.path.join(t, "lock"), os.O_CREAT | os.O_WRONLY)
    os.close(fd)
print("tmp", t)
os.makedirs("made/sub")
fd = os.open("made/sub/lock", os.O_CREAT | os.O_WRONLY)
os.close(fd)
shutil.rmtree("made")
print("made", os.path.exists("made"))
