"""GPT-2 training in fp32 with gradient accumulation: 2 optimizer steps
(AdamW) of 3 micro-batches each (dropout 0.1, use_cache=True).
memsim spec: model:arch=gpt2,layers=4,hidden=256,heads=4,vocab=8000,positions=256,batch=4,seq=128,steps=2,accum=3
"""
import torch

from models import GPT2, device, train


def build():
    torch.manual_seed(0)
    return GPT2(4, 256, 4, 8000, 256).to(device())


def run(model):
    train(model, lambda k: torch.randint(0, 8000, (4, 128), device=device()),
          steps=2, accum=3)


if __name__ == "__main__":
    run(build())
