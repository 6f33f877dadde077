# tests/recorder_programs.sh: memsim record --fake, torch.load onto the GPU
# of a checkpoint the script writes for real (host._Load).
import sys
import torch
how = sys.argv[1]
base = torch.arange(300, dtype=torch.float32)
sd = {"w": torch.ones(1000, 3), "half": torch.zeros(777, dtype=torch.float16),
      "view": base[100:200], "also": base[:10], "step": torch.tensor(3.0),
      "ids": torch.arange(5)}
torch.save(sd, "ck.pt")
maps = {"str": "cuda", "dev": torch.device("cuda"), "dict": {"cpu": "cuda:0"},
        "fn": lambda s, loc: s.cuda(), "to": lambda s, loc: s.to(device="cuda:0"),
        "cpu": "cpu"}
ck = torch.load("ck.pt", map_location=maps[how])
print("devices", " ".join(v.device.type for v in ck.values()))
print("values", ck["view"][5].item(), ck["also"][3].item(),
      ck["ids"].sum().item(), ck["step"].item())
m = torch.nn.Linear(3, 1000, bias=False).cuda()
m.load_state_dict({"weight": ck["w"]})
