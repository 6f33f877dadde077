"""GPT-2 training in fp32 with every block checkpointed as Hugging Face's
gradient_checkpointing_enable() does it (reentrant; the cache reaches the
blocks): 2 AdamW steps.
memsim spec: model:arch=gpt2,layers=4,hidden=256,heads=4,vocab=8000,positions=256,batch=4,seq=128,steps=2,checkpoint=every:1
"""
import torch

from models import GPT2, device, train


def build():
    torch.manual_seed(0)
    return GPT2(4, 256, 4, 8000, 256, checkpoint=True).to(device())


def run(model):
    train(model, lambda k: torch.randint(0, 8000, (4, 128), device=device()),
          steps=2)


if __name__ == "__main__":
    run(build())
