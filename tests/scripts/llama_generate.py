"""Llama generation with a KV cache (grouped-query attention, 8 heads, 4
key/value heads), fp32: two prompts of 64 tokens, 16 greedy decode steps
each (prefill with logits_to_keep=1, DynamicCache grown by torch.cat).
memsim spec: model:arch=llama,layers=4,hidden=256,heads=8,kv_heads=4,ffn=704,vocab=8000,positions=512,batch=4,seq=64,steps=2,inference=1,generate=16
"""
import torch

from models import Llama, device, generate


def build():
    torch.manual_seed(0)
    return Llama(4, 256, 8, 4, 8000, 704).eval().to(device())


def run(model):
    for s in range(2):
        ids = torch.randint(0, 8000, (4, 64), device=device())
        generate(model, ids, 16)
        del ids


if __name__ == "__main__":
    run(build())
