"""Device probe for memsim record's cuDNN RNN workspace rule at small
hidden sizes (rnn.py SMALL_H): the forward workspace (the largest block
_cudnn_rnn frees before it returns) and the largest block kept, of
nn.LSTM/GRU/RNN in train mode, unidirectional, fp32 and fp16, with and
without dropout, over 600 shapes (H 16..256), the word_language_model
corpus programs' first; writes tests/data/record/rnn_ws_small.tsv's rows.
  python3 rnn_small_probe.py OUT.tsv SECONDS"""
import itertools, random, sys, time, torch
dev = "cuda"
random.seed(7)
DT = {"fp32": torch.float32, "fp16": torch.float16}
cfgs = [(m, 64, 64, 2, b, 35, "fp32", p) for m in ("LSTM", "GRU", "RNN") for b in (10, 20) for p in (0.0, 0.2)]
while len(cfgs) < 600:
    cfgs.append((random.choice(["LSTM", "GRU", "RNN"]), random.choice([16, 32, 64, 128, 256]),
                 random.choice([16, 32, 48, 64, 96, 128, 192, 256]), random.choice([1, 2, 3]),
                 random.choice([1, 4, 10, 20, 32, 64]), random.choice([1, 8, 20, 35, 64, 128]),
                 random.choice(["fp32", "fp16"]), random.choice([0.0, 0.2])))
t0 = time.time()
out = open(sys.argv[1], "w")
out.write("mode\tI\tH\tL\tB\tT\tdtype\tdropout\tworkspace\treserve\n")
for mode, I, H, L, B, T, dt, p in cfgs:
    if time.time() - t0 > float(sys.argv[2]):
        break
    m = getattr(torch.nn, mode)(I, H, L, dropout=p if L > 1 else 0.0).to(dev, DT[dt]).train()
    x = torch.randn(T, B, I, device=dev, dtype=DT[dt])
    m(x)  # warm (dropout states, handles)
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
    y = m(x)
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    tr = snap["device_traces"][0]
    live, freed = {}, []
    for e in tr:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
        elif e["action"] == "free_completed" and e["addr"] in live:
            freed.append(live.pop(e["addr"]))
    ws = max(freed) if freed else 0
    res = max(live.values()) if live else 0
    out.write("%s\t%d\t%d\t%d\t%d\t%d\t%s\t%g\t%d\t%d\n" % (mode, I, H, L, B, T, dt, p, ws, res))
    del y, m, x
out.close()
print("done", time.time() - t0)
