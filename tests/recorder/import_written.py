"""Import a module the script wrote during the recording, as YOLOv6's
Config.fromfile does (shutil.copyfile of the config to _tempconfig.py in
a tempfile.TemporaryDirectory, that folder put on sys.path,
importlib.import_module), and a package it wrote into a folder it made
(os.makedirs).  The writes go to the recorder's scratch folder; the
imports must find them there.  Allocates MIB MiB (the first module's) +
K MiB (the package's) of fp32 on the GPU.

    python3 import_written.py"""
import importlib
import os
import shutil
import sys
import tempfile

import torch

here = os.getcwd()
with open(os.path.join(here, "cfg_src.py"), "w") as f:
    f.write("MIB = 3\nname = 'written'\n")
with tempfile.TemporaryDirectory() as d:
    shutil.copyfile(os.path.join(here, "cfg_src.py"),
                    os.path.join(d, "_tempconfig.py"))
    sys.path.insert(0, d)
    mod = importlib.import_module("_tempconfig")
    sys.path.pop(0)
    cfg = {k: v for k, v in mod.__dict__.items() if not k.startswith("__")}
    del sys.modules["_tempconfig"]
os.makedirs(os.path.join(here, "made", "pkgw"))
with open(os.path.join(here, "made", "pkgw", "__init__.py"), "w") as f:
    f.write("from .sub import K\n")
with open(os.path.join(here, "made", "pkgw", "sub.py"), "w") as f:
    f.write("K = 5\n")
sys.path.insert(0, os.path.join(here, "made"))
import pkgw  # noqa: E402
print("imported", cfg["name"], cfg["MIB"], pkgw.K, os.path.basename(pkgw.__file__))
x = torch.empty(cfg["MIB"] << 18, device="cuda")
y = torch.empty(pkgw.K << 18, device="cuda")
torch.cuda.synchronize()
