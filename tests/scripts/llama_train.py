"""Llama training in fp32: 2 AdamW steps (use_cache=True).
memsim spec: model:arch=llama,layers=4,hidden=256,heads=8,ffn=704,vocab=8000,positions=512,batch=4,seq=128,steps=2
"""
import torch

from models import Llama, device, train


def build():
    torch.manual_seed(0)
    return Llama(4, 256, 8, 8, 8000, 704).to(device())


def run(model):
    train(model, lambda k: torch.randint(0, 8000, (4, 128), device=device()),
          steps=2)


if __name__ == "__main__":
    run(build())
