"""Writes torch.cuda.memory_summary()'s table, formatted by PyTorch's own
code (torch/cuda/memory.py), for the memory_stats in a `memsim run --json`
object read on stdin.  Used once to make the golden files next to it; the
tests compare `memsim summary` with them.

    memsim run --json TRACE | python3 torch_summary.py > TRACE.summary.txt
"""
import json
import sys

import torch.cuda.memory as m

stats = json.load(sys.stdin)
m.memory_stats = lambda device=None: stats  # the replay's statistics
sys.stdout.write(m.memory_summary(device=0, abbreviated="--abbreviated" in sys.argv))
