# tests/recorder_gemm_lt.sh: which Linear's addmm takes cuBLASLt's workspace
import sys
import torch
case = sys.argv[1]
lin = torch.nn.Linear(20, 1 if case == "narrow" else 8).cuda()
x = torch.randn(1 if case == "row" else 64, 20, device="cuda")
lin(x)
