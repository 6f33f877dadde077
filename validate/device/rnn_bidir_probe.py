"""Device probe for memsim record's cuDNN RNN workspace rule with
bidirectional layers (rnn.py workspace_bytes, D = 2): the forward
workspace (the largest block _cudnn_rnn frees before it returns) of
nn.LSTM/GRU/RNN in train mode, each shape unidirectional and
bidirectional, fp32 and fp16, no dropout, H 16..512; the yunjey-birnn
corpus program's LSTM first; writes tests/data/record/rnn_ws_bidir.tsv's
rows.
  python3 rnn_bidir_probe.py OUT.tsv SECONDS"""
import random, sys, time, torch
dev = "cuda"
random.seed(11)
DT = {"fp32": torch.float32, "fp16": torch.float16}
cfgs = [("LSTM", 28, 128, 2, b, 28, "fp32") for b in (100, 80)]
while len(cfgs) < 400:
    cfgs.append((random.choice(["LSTM", "GRU", "RNN"]), random.choice([16, 28, 64, 128, 256]),
                 random.choice([16, 32, 64, 128, 192, 256, 384, 512]), random.choice([1, 2, 3]),
                 random.choice([1, 4, 10, 32, 64, 100]), random.choice([1, 8, 28, 64, 128]),
                 random.choice(["fp32", "fp16"])))
t0 = time.time()
out = open(sys.argv[1], "w")
out.write("mode\tI\tH\tL\tD\tB\tT\tdtype\tworkspace\treserve\n")
for mode, I, H, L, B, T, dt in cfgs:
    for D in (1, 2):
        if time.time() - t0 > float(sys.argv[2]):
            break
        m = getattr(torch.nn, mode)(I, H, L, bidirectional=D == 2).to(dev, DT[dt]).train()
        x = torch.randn(T, B, I, device=dev, dtype=DT[dt])
        m(x)
        torch.cuda.synchronize()
        torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
        y = m(x)
        torch.cuda.synchronize()
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        live, freed = {}, []
        for e in snap["device_traces"][0]:
            if e["action"] == "alloc":
                live[e["addr"]] = e["size"]
            elif e["action"] == "free_completed" and e["addr"] in live:
                freed.append(live.pop(e["addr"]))
        ws = max(freed) if freed else 0
        res = max(live.values()) if live else 0
        out.write("%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\n" % (mode, I, H, L, D, B, T, dt, ws, res))
        out.flush()
        del y, m, x
out.close()
print("done", time.time() - t0)
