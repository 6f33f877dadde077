# A GPU tensor left in a reference cycle in the oldest generation is
# freed by the full collection that the script's first import of
# torch._dynamo makes in a real run (torch.optim's first optimizer
# imports it lazily), not before: torch.manual_seed and making a module
# import nothing there.  The recorder imported torch._dynamo before the
# script began (tests/recorder_dynamo_import_gc.sh).
import gc
import weakref

import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"


class Holder:
    def __init__(self):
        self.me = self   # a cycle, as a module's bound methods make
        self.t = torch.empty(4 << 20, device=dev)


h = Holder()
gc.collect()             # h survives: it is in the oldest generation now
ref = weakref.ref(h)
del h
torch.manual_seed(0)
lin = torch.nn.Linear(8, 8).to(dev)
print("freed before optimizer", ref() is None)
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
print("freed after optimizer", ref() is None)
