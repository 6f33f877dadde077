"""Device probe for memsim record's cuDNN RNN workspace rule at few time
steps and large batches (rnn.py SMALL_H's per-sequence term C*H, fitted
on rnn_small_probe.py's grid of B <= 64; the x-transformers parity
program's GRU runs on 1024 rows of one step): nn.LSTM/GRU/RNN(I, H) in
train mode, one layer, unidirectional, fp32 and fp16, input T x B x I;
per call the forward's workspace (the largest block freed within it), the
largest block it keeps, and the backward's largest block freed within it
(the backward-data and backward-weight workspaces).  Rows as
tests/data/record/rnn_ws_small.tsv's, one column more.
  python3 rnn_step_probe.py OUT.tsv SECONDS"""
import itertools, sys, time, torch
dev = "cuda"
DT = {"fp32": torch.float32, "fp16": torch.float16}


def freed_and_kept(fn):
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=100000)
    r = fn()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    live, freed = {}, []
    for e in snap["device_traces"][0]:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
        elif e["action"] == "free_completed" and e["addr"] in live:
            freed.append(live.pop(e["addr"]))
    return r, max(freed, default=0), max(live.values(), default=0)


t0 = time.time()
out = open(sys.argv[1], "w")
out.write("mode\tI\tH\tL\tB\tT\tdtype\tdropout\tworkspace\treserve\tbackward\n")
cfgs = itertools.product(("GRU", "LSTM", "RNN"), ((64, 128), (64, 64), (128, 192)),
                         ((1, 1024), (1, 256), (1, 4096), (2, 1024), (4, 256), (8, 1024)),
                         ("fp32", "fp16"))
for mode, (I, H), (T, B), dt in cfgs:
    if time.time() - t0 > float(sys.argv[2]):
        break
    m = getattr(torch.nn, mode)(I, H).to(dev, DT[dt]).train()
    x = torch.randn(T, B, I, device=dev, dtype=DT[dt], requires_grad=True)
    m(x)[0].float().sum().backward()  # warm (handles)
    y, ws, res = freed_and_kept(lambda: m(x)[0])
    loss = y.float().sum()
    _, bws, _ = freed_and_kept(lambda: loss.backward())
    out.write("%s\t%d\t%d\t1\t%d\t%d\t%s\t0\t%d\t%d\t%d\n" % (mode, I, H, B, T, dt, ws, res, bws))
    out.flush()
    del y, loss, m, x
out.close()
print("done", time.time() - t0)
