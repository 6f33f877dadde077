"""Device probe for memsim record's cuDNN RNN rule on packed sequences
(torch.nn.utils.rnn.pack_padded_sequence into nn.LSTM / nn.GRU / nn.RNN):
the allocator trace window of each call (forward with grad, its backward,
forward without grad) for the packed input and for the padded input of the
same lengths' maximum, over a grid of shapes and length spreads.
  python3 rnn_packed_probe.py OUT.json [SECONDS]
Each call also runs in eval mode (the window "eval").  With
PACKED_SET=large, 60 shapes of 128 to 512 sequences (bentrevett's
sentiment BiLSTM's 512 x 256 steps, H 300, among them) instead."""
import json, os, random, sys, time
import torch
from torch.nn.utils.rnn import pack_padded_sequence
from probewin import start, window

out = sys.argv[1]
budget = float(sys.argv[2]) if len(sys.argv) > 2 else 40.0
dev = "cuda"
t0 = time.time()
random.seed(7)
DT = {"fp32": torch.float32, "fp16": torch.float16}
cfgs = [("LSTM", 128, 256, 1, 16, 64, "fp32", 0, "half"),
        ("GRU", 128, 256, 2, 16, 64, "fp32", 1, "half"),
        ("LSTM", 64, 512, 2, 32, 100, "fp16", 0, "full"),
        ("LSTM", 64, 512, 2, 32, 100, "fp16", 0, "one")]
if os.environ.get("PACKED_SET") == "large":
    cfgs = [("LSTM", 100, 300, 2, 512, 256, "fp32", 1, "uniform"),
            ("LSTM", 100, 300, 2, 512, 256, "fp32", 1, "half")]
    while len(cfgs) < 60:
        cfgs.append((random.choice(["LSTM", "LSTM", "GRU", "RNN"]),
                     random.choice([64, 100, 256, 512]),
                     random.choice([128, 256, 300, 512, 1024]),
                     random.choice([1, 2, 3]),
                     random.choice([128, 256, 512]),
                     random.choice([16, 64, 128, 256]),
                     random.choice(["fp32", "fp16"]),
                     random.choice([0, 1]),
                     random.choice(["half", "uniform", "one", "full"])))
while len(cfgs) < 300:
    cfgs.append((random.choice(["LSTM", "LSTM", "GRU", "RNN"]),
                 random.choice([32, 64, 128, 256, 512]),
                 random.choice([64, 128, 256, 384, 512, 1024]),
                 random.choice([1, 1, 2, 3]),
                 random.choice([2, 4, 8, 16, 32, 64]),
                 random.choice([4, 16, 32, 64, 128, 256]),
                 random.choice(["fp32", "fp16"]),
                 random.choice([0, 0, 1]),
                 random.choice(["half", "uniform", "one", "full"])))


def lengths(b, t, spread):
    """Sequence lengths, descending, the first T."""
    if spread == "full":
        n = [t] * b
    elif spread == "one":
        n = [t] + [1] * (b - 1)
    elif spread == "half":
        n = [t] + [max(1, t // 2)] * (b - 1)
    else:
        n = [t] + [random.randint(1, t) for _ in range(b - 1)]
    return sorted(n, reverse=True)


def calls(m, x, packed):
    rec = {}
    start()
    y = m(x)[0]
    rec["fwd"] = window(4)
    data = y.data if packed else y
    g = torch.ones_like(data)
    start()
    data.backward(g)
    rec["bwd"] = window(4)
    del y, g, data
    # without grad, then the module in eval mode too: cuDNN's inference
    # forward (CUDNN_FWD_MODE_INFERENCE: no reserve, its own workspace)
    for key, train in (("infer", True), ("eval", False)):
        m.train(train)
        with torch.no_grad():
            start()
            y = m(x)[0]
            rec[key] = window(4)
        del y
    m.train()
    return rec


res = []
for cfg in cfgs:
    if time.time() - t0 > budget:
        break
    mode, inp, hid, layers, b, t, dt, bi, spread = cfg
    try:
        m = getattr(torch.nn, mode)(inp, hid, layers,
                                    bidirectional=bool(bi)).to(dev, DT[dt])
        n = lengths(b, t, spread)
        x = torch.randn((t, b, inp), device=dev, dtype=DT[dt],
                        requires_grad=True)
        torch.cuda.synchronize()
        r = {"cfg": cfg, "lengths": n}
        p = pack_padded_sequence(x, torch.tensor(n))
        r["batch_sizes"] = p.batch_sizes.tolist()
        r["packed"] = calls(m, p, True)
        x.grad = None
        m.zero_grad(set_to_none=True)
        r["padded"] = calls(m, x, False)
        res.append(r)
        del m, x, p
    except Exception as e:
        res.append({"cfg": cfg, "error": str(e)[:200]})
    torch.cuda.memory._record_memory_history(enabled=None)
    torch.cuda.empty_cache()
json.dump({"torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "probes": res},
          open(out, "w"))
print("rnn packed probe: %d configs in %.0f s" % (len(res), time.time() - t0))
