"""GPT-2 inference under no_grad, fp32, as `y = model(input_ids=x).logits`
runs it (use_cache=True, Hugging Face's default): two batches.
memsim spec: model:arch=gpt2,layers=4,hidden=256,heads=4,vocab=8000,positions=256,batch=4,seq=128/64,steps=2,inference=1
"""
import torch

from models import GPT2, device


def build():
    torch.manual_seed(0)
    return GPT2(4, 256, 4, 8000, 256).eval().to(device())


def run(model):
    with torch.no_grad():
        for T in (128, 64):
            x = torch.randint(0, 8000, (4, T), device=device())
            y = model(x)[0]
            del x, y


if __name__ == "__main__":
    run(build())
