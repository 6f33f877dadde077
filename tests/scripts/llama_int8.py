"""Llama inference in bf16 with int8 weight-only linear layers (lm_head
included; quantized on the host, then moved): two batches.
memsim spec: model:arch=llama,layers=4,hidden=256,heads=8,ffn=704,vocab=8000,positions=512,batch=4,seq=128/96,steps=2,inference=1,dtype=bf16,weights=int8
"""
import torch

from models import Llama, device, quantize


def build():
    torch.manual_seed(0)
    m = Llama(4, 256, 8, 8, 8000, 704).eval().to(torch.bfloat16)
    return quantize(m, "int8").to(device())


def run(model):
    with torch.no_grad():
        for T in (128, 96):
            x = torch.randint(0, 8000, (4, T), device=device())
            y = model(x)[0]
            del x, y


if __name__ == "__main__":
    run(build())
