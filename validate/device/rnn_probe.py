"""Device probe for memsim record's cuDNN RNN rule: the allocator trace
window of each torch._VF RNN call (forward with grad, its backward, and
forward without grad) over a grid of LSTM/GRU/RNN shapes and dtypes.
  python3 rnn_probe.py OUT.json [SECONDS]"""
import json, random, sys, time
import torch
from probewin import start, window

out = sys.argv[1]
budget = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
dev = "cuda"
t0 = time.time()


random.seed(5)
cfgs = [("LSTM", 256, 512, 2, 32, 128, "fp32", 0, 1),
        ("LSTM", 256, 512, 2, 32, 96, "fp32", 0, 1),
        ("GRU", 192, 384, 3, 24, 200, "fp16", 0, 1),
        ("GRU", 192, 384, 3, 8, 300, "fp16", 0, 1)]
while len(cfgs) < 400:
    cfgs.append((random.choice(["LSTM", "LSTM", "GRU", "RNN"]),
                 random.choice([32, 64, 128, 192, 256, 512, 1024]),
                 random.choice([64, 128, 256, 384, 512, 768, 1024, 2048]),
                 random.choice([1, 1, 2, 3, 4]),
                 random.choice([1, 4, 8, 16, 32, 64, 128]),
                 random.choice([1, 8, 32, 64, 128, 256, 512]),
                 random.choice(["fp32", "fp16", "bf16"]),
                 random.choice([0, 0, 1]),
                 random.choice([0, 1])))
DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
res = []
for cfg in cfgs:
    if time.time() - t0 > budget:
        break
    mode, inp, hid, layers, b, t, dt, bi, bf = cfg
    try:
        m = getattr(torch.nn, mode)(inp, hid, layers, batch_first=bool(bf),
                                    bidirectional=bool(bi)).to(dev, DT[dt])
        x = torch.randn((b, t, inp) if bf else (t, b, inp), device=dev,
                        dtype=DT[dt], requires_grad=True)
        torch.cuda.synchronize()
        rec = {"cfg": cfg}
        start()
        y = m(x)[0]
        rec["fwd"] = window()
        g = torch.ones_like(y)
        start()
        y.backward(g)
        rec["bwd"] = window()
        del y, g
        x.grad = None
        m.zero_grad(set_to_none=True)
        with torch.no_grad():
            start()
            y = m(x)[0]
            rec["infer"] = window()
        del y
        rec["params"] = [p.numel() for p in m.parameters()]
        res.append(rec)
        del m, x
    except Exception as e:
        res.append({"cfg": cfg, "error": str(e)[:200]})
    torch.cuda.memory._record_memory_history(enabled=None)
    torch.cuda.empty_cache()
json.dump({"torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "probes": res},
          open(out, "w"))
print("rnn probe: %d calls in %.0f s" % (len(res), time.time() - t0))
