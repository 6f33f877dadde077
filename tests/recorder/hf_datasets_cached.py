# tests/recorder_hfcache.sh: a dataset the user's Hugging Face datasets
# cache already holds, loaded by name offline under --fake.
#   hf_datasets_cached.py make PARQUET   (run for real) leave in the cache
#       what load_dataset("memsim/tiny") leaves after a download
#   hf_datasets_cached.py load           (recorded) load it by name, map it
import json
import os
import shutil
import sys
import tempfile

if sys.argv[1] == "make":
    import datasets
    cache = os.environ["HF_DATASETS_CACHE"]
    with tempfile.TemporaryDirectory() as tmp:
        b = datasets.load_dataset_builder(
            "parquet", data_files={"train": sys.argv[2]},
            cache_dir=os.path.join(tmp, "c"))
        b.download_and_prepare()
        dst = os.path.join(cache, "memsim___tiny", "default", "0.0.0",
                           os.path.basename(b.cache_dir))
        shutil.copytree(b.cache_dir, dst)
    os.rename(os.path.join(dst, "parquet-train.arrow"),
              os.path.join(dst, "tiny-train.arrow"))
    with open(os.path.join(dst, "dataset_info.json")) as f:
        info = json.load(f)
    info["dataset_name"] = "tiny"
    with open(os.path.join(dst, "dataset_info.json"), "w") as f:
        json.dump(info, f)
    sys.exit(0)

import torch
from datasets import load_dataset
ds = load_dataset("memsim/tiny", split="train")
ds = ds.map(lambda r: {"n": len(r["text"])})   # a cache file written
x = torch.tensor(ds["n"], device="cuda")
print("rows", len(ds), tuple(x.shape))
# a write to a file of the cache (one the user's cache holds): the
# user's file is left as it was
import glob
info = glob.glob(os.path.join(os.environ["HF_DATASETS_CACHE"], "memsim___tiny",
                              "*", "*", "*", "dataset_info.json"))[0]
arrow = glob.glob(os.path.join(os.path.dirname(info), "*.arrow"))[0]
os.chmod(arrow, 0o600)          # its mode and times set: a scratch copy's
os.utime(arrow, (0, 0))
print("mode", oct(os.stat(arrow).st_mode & 0o777), os.stat(arrow).st_mtime)
with open(info, "a") as f:
    f.write(" ")
with open(info) as f:
    print("appended", f.read().endswith("} "))
with open(info, "w") as f:
    f.write("{}")
with open(info) as f:
    print("written", f.read())
