"""Synthetic data for the corpus programs, written into a scratch folder
(the program's working directory), never into the source tree.

    python3 mkdata.py DIR KIND...

Every file is made from a fixed seed, so its size, vocabulary and the
shapes a program derives from it are the same on every machine.  KINDs:

text        input.txt: 200,000 characters over 65 symbols (the size and
            alphabet of Shakespeare's tiny corpus), for character models
            (minGPT's chargpt, makeMoE).
names       names.txt: 4,000 lower-case names of 3 to 10 letters (makemore).
shakespeare_char
            data/shakespeare_char/{train,val}.bin (uint16 token ids) and
            meta.pkl (vocab_size, stoi, itos), as nanoGPT's prepare.py
            writes them.
tinystories data/TinyStories_all_data/data00.bin, data01.bin: uint16 token
            ids below 32000, the pretokenized shards llama2.c reads.
wikitext    wikitext/{train,valid,test}.txt (pytorch/examples'
            word_language_model) and data/wikitext-2.txt (Lightning's
            WikiText2 demo), words drawn from a 5,000-word vocabulary.
cora        cora/cora.content, cora/cora.cites: 2,000 papers, 500 binary
            features, 7 classes, 5,000 citations (pytorch/examples' gat).
cora-tgz    cora/ as above and cora.tgz of it, the archive pytorch/examples'
            gcn downloads (served by wrap.py --serve).
enwik8      data/enwik8.gz: 95,000,000 bytes (x-transformers reads 95e6
            and keeps the last 5e6 for validation).
imagefolder imagefolder/{train,val,validation}/cNN/NNN.jpg: 4 classes, 16
            training and 8 validation JPEG images each (the same 8 under
            val and validation), random pixels, 64 to 96 pixels a side:
            the class-per-folder layout of torchvision's ImageFolder
            (pytorch/examples' imagenet) and timm's folder reader.
minimind    minimind's layout, run from trainer/ (its train_pretrain.py
            opens ../model for the tokenizer): model/tokenizer.json and
            tokenizer_config.json (copies of the corpus files),
            dataset/pretrain.jsonl (64 lines {"text": ...} of 40 to 400
            random words of lower-case letters), an empty trainer/.
hf-tiny-llama
            tiny-llama/: a LlamaForCausalLM of 4 layers (hidden 512,
            vocabulary 6,400) with random weights, saved by save_pretrained,
            minimind's tokenizer files beside it (a model folder for
            from_pretrained, AutoConfig and AutoTokenizer).
hf-tinystories
            in hf-home/ (run.sh's HF_HOME) the datasets library's cache of
            roneneldan/TinyStories: 40 rows {"text": ...} of 60 to 200
            random words, as load_dataset leaves it after a download, so
            that the offline load_dataset("roneneldan/TinyStories") of
            accelerate's nd_parallel_trainer.py finds it.
hf-smollm-wikitext
            For accelerate's gradient_accumulation_for_autoregressive_models.py:
            in hf-home/ the hub's cache of HuggingFaceTB/SmolLM-360M
            holding the model of hf-tiny-llama (not SmolLM's size) and
            minimind's tokenizer, and the datasets cache of
            Salesforce/wikitext, config wikitext-2-v1: train 600 rows,
            validation and test 64, one in four empty (wikitext's blank
            lines), the others 10 to 120 random words.
binarized_mnist
            binarized_mnist.npz: train_data (2,000 x 784) and valid_data
            (500 x 784), float32 zeros and ones, the arrays of the
            binarized MNIST file karpathy/pytorch-made's run.py loads.
copy:PATH   a copy of the corpus file PATH (relative to tests/corpus), for
            the programs that open it from the working directory
            (nanoGPT's and llama2.c's configurator.py, which train.py and
            sample.py exec; llama2.c's tokenizer.model).
"""
import gzip
import os
import pickle
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ALPHABET = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def text(d, n=200_000):
    rng = np.random.default_rng(1)
    s = "".join(np.array(list(ALPHABET))[rng.integers(0, len(ALPHABET), n)])
    with open(os.path.join(d, "input.txt"), "w") as f:
        f.write(s)
    return s


def names(d):
    rng = np.random.default_rng(2)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    with open(os.path.join(d, "names.txt"), "w") as f:
        for _ in range(4000):
            f.write("".join(letters[rng.integers(0, 26, rng.integers(3, 11))]) + "\n")


def shakespeare_char(d):
    rng = np.random.default_rng(3)
    s = "".join(np.array(list(ALPHABET))[rng.integers(0, len(ALPHABET), 100_000)])
    chars = sorted(set(s))
    stoi = {c: i for i, c in enumerate(chars)}
    itos = {i: c for i, c in enumerate(chars)}
    ids = np.array([stoi[c] for c in s], dtype=np.uint16)
    out = os.path.join(d, "data", "shakespeare_char")
    os.makedirs(out, exist_ok=True)
    ids[:90_000].tofile(os.path.join(out, "train.bin"))
    ids[90_000:].tofile(os.path.join(out, "val.bin"))
    with open(os.path.join(out, "meta.pkl"), "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": itos, "stoi": stoi}, f)


def copy(d, path):
    shutil.copy(os.path.join(HERE, path), d)


def tinystories(d):
    rng = np.random.default_rng(4)
    out = os.path.join(d, "data", "TinyStories_all_data")
    os.makedirs(out, exist_ok=True)
    for i in range(2):
        rng.integers(1, 32000, 200_000, dtype=np.uint16).tofile(
            os.path.join(out, "data%02d.bin" % i))


def wikitext(d):
    rng = np.random.default_rng(5)
    vocab = np.array(["w%d" % i for i in range(5000)])
    def lines(nwords):
        out, left = [], nwords
        while left > 0:
            k = min(left, int(rng.integers(5, 30)))
            out.append(" " + " ".join(vocab[rng.integers(0, len(vocab), k)]) + " \n")
            left -= k
        return "".join(out)
    w = os.path.join(d, "wikitext")
    os.makedirs(w, exist_ok=True)
    for name, n in (("train.txt", 6000), ("valid.txt", 1500), ("test.txt", 1500)):
        with open(os.path.join(w, name), "w") as f:
            f.write(lines(n))
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    # WikiText2 cuts 35-token blocks and keeps 2 x 2,000 for validation and
    # test: 200,000 words leave 1,700 or so for training.
    with open(os.path.join(d, "data", "wikitext-2.txt"), "w") as f:
        f.write(lines(200_000))


def cora(d):
    rng = np.random.default_rng(6)
    n, feats, classes = 2000, 500, 7
    c = os.path.join(d, "cora")
    os.makedirs(c, exist_ok=True)
    ids = rng.permutation(1_000_000)[:n] + 1
    x = (rng.random((n, feats)) < 0.02).astype(int)
    x[:, 0] = 1  # no paper without a word
    with open(os.path.join(c, "cora.content"), "w") as f:
        for i in range(n):
            f.write("%d\t%s\tclass%d\n" % (ids[i], "\t".join(map(str, x[i])),
                                           rng.integers(0, classes)))
    with open(os.path.join(c, "cora.cites"), "w") as f:
        for _ in range(5000):
            a, b = rng.integers(0, n, 2)
            f.write("%d\t%d\n" % (ids[a], ids[b]))


def cora_tgz(d):
    """cora/ as cora() makes it, and cora.tgz of it (pytorch/examples' gcn
    downloads and extracts the archive every run: wrap.py --serve)."""
    import tarfile
    cora(d)
    with tarfile.open(os.path.join(d, "cora.tgz"), "w:gz") as t:
        t.add(os.path.join(d, "cora"), arcname="cora")


def enwik8(d):
    rng = np.random.default_rng(7)
    block = rng.integers(32, 127, 16384, dtype=np.uint8).tobytes()
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    with gzip.open(os.path.join(d, "data", "enwik8.gz"), "wb", compresslevel=1) as f:
        for _ in range(95_000_000 // len(block) + 1):
            f.write(block)


def imagefolder(d):
    from PIL import Image
    rng = np.random.default_rng(8)
    root = os.path.join(d, "imagefolder")
    for split, n in (("train", 16), ("val", 8)):
        for c in range(4):
            cdir = os.path.join(root, split, "c%02d" % c)
            os.makedirs(cdir, exist_ok=True)
            for i in range(n):
                h, w = rng.integers(64, 97, 2)
                px = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
                Image.fromarray(px).save(os.path.join(cdir, "%03d.jpg" % i),
                                         quality=90)
    shutil.copytree(os.path.join(root, "val"),
                    os.path.join(root, "validation"))


def minimind(d):
    import json
    rng = np.random.default_rng(10)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    for sub in ("model", "dataset", "trainer"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(HERE, "minimind", "model", f),
                    os.path.join(d, "model"))
    with open(os.path.join(d, "dataset", "pretrain.jsonl"), "w") as f:
        for _ in range(64):
            words = ["".join(letters[rng.integers(0, 26, rng.integers(2, 9))])
                     for _ in range(int(rng.integers(40, 401)))]
            f.write(json.dumps({"text": " ".join(words)}) + "\n")


HF_HOME = "hf-home"  # run.sh's HF_HOME, relative to the scratch folder
HF_SHA = "0" * 40    # the revision refs/main names in the hub's cache


def hf_words(rng, lo, hi):
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return " ".join("".join(letters[rng.integers(0, 26, rng.integers(2, 9))])
                    for _ in range(int(rng.integers(lo, hi + 1))))


def hf_model(out):
    """A small Llama with random weights and minimind's tokenizer, as
    from_pretrained reads a model folder."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=6400, hidden_size=512, intermediate_size=1376,
                      num_hidden_layers=4, num_attention_heads=8,
                      num_key_value_heads=8, max_position_embeddings=2048,
                      bos_token_id=0, eos_token_id=0, pad_token_id=0)
    LlamaForCausalLM(cfg).save_pretrained(out)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(HERE, "minimind", "model", f), out)


def hf_dataset_cache(d, repo, config, splits):
    """Leave in d's HF_HOME the datasets library's cache of REPO (CONFIG),
    SPLITS {split: [rows]}, where load_dataset(REPO, CONFIG) looks for it
    offline (datasets' CachedDatasetModuleFactory: HF_DATASETS_CACHE/
    NAMESPACE___NAME/CONFIG/VERSION/HASH with NAME-SPLIT.arrow and
    dataset_info.json).  The arrow files and their info are written by the
    library's own parquet builder and renamed."""
    import json
    import tempfile
    import pyarrow as pa
    import pyarrow.parquet as pq
    import datasets
    from datasets.naming import camelcase_to_snakecase
    ns, name = repo.split("/")
    name = camelcase_to_snakecase(name)
    root = os.path.join(os.path.abspath(d), HF_HOME, "datasets")
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        files = {}
        for split, rows in splits.items():
            files[split] = os.path.join(tmp, split + ".parquet")
            pq.write_table(pa.table({"text": rows}), files[split])
        b = datasets.load_dataset_builder("parquet", data_files=files,
                                          cache_dir=os.path.join(tmp, "c"))
        b.download_and_prepare()
        src = b.cache_dir
        dst = os.path.join(root, ns + "___" + name, config, "0.0.0",
                           os.path.basename(src))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copytree(src, dst)
    for split in splits:
        os.rename(os.path.join(dst, "parquet-%s.arrow" % split),
                  os.path.join(dst, "%s-%s.arrow" % (name, split)))
    with open(os.path.join(dst, "dataset_info.json")) as f:
        info = json.load(f)
    info.update(config_name=config, dataset_name=name)
    for s in info["splits"].values():
        s["dataset_name"] = name
    with open(os.path.join(dst, "dataset_info.json"), "w") as f:
        json.dump(info, f)


def hf_tiny_llama(d):
    hf_model(os.path.join(d, "tiny-llama"))


def hf_tinystories(d):
    rng = np.random.default_rng(11)
    hf_dataset_cache(d, "roneneldan/TinyStories", "default",
                     {"train": [hf_words(rng, 60, 200) for _ in range(40)]})


def hf_smollm_wikitext(d):
    rng = np.random.default_rng(12)
    repo = os.path.join(d, HF_HOME, "hub", "models--HuggingFaceTB--SmolLM-360M")
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(HF_SHA)
    hf_model(os.path.join(repo, "snapshots", HF_SHA))

    def rows(n):
        return ["" if rng.random() < 0.25 else " " + hf_words(rng, 10, 120) + " \n"
                for _ in range(n)]
    hf_dataset_cache(d, "Salesforce/wikitext", "wikitext-2-v1",
                     {"train": rows(600), "validation": rows(64),
                      "test": rows(64)})


def binarized_mnist(d):
    rng = np.random.default_rng(9)
    np.savez(os.path.join(d, "binarized_mnist.npz"),
             train_data=(rng.random((2000, 784)) < 0.2).astype(np.float32),
             valid_data=(rng.random((500, 784)) < 0.2).astype(np.float32))


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: mkdata.py DIR KIND...")
    d = sys.argv[1]
    kinds = {"text": text, "names": names, "shakespeare_char": shakespeare_char,
             "tinystories": tinystories, "wikitext": wikitext, "cora": cora,
             "cora-tgz": cora_tgz,
             "enwik8": enwik8, "imagefolder": imagefolder,
             "minimind": minimind, "hf-tiny-llama": hf_tiny_llama,
             "hf-tinystories": hf_tinystories,
             "hf-smollm-wikitext": hf_smollm_wikitext,
             "binarized_mnist": binarized_mnist}
    for k in sys.argv[2:]:
        if k.startswith("copy:"):
            copy(d, k.split(":", 1)[1])
        elif k in kinds:
            kinds[k](d)
        else:
            sys.exit("mkdata.py: unknown data kind '%s'" % k)


if __name__ == "__main__":
    main()
