# tests/recorder_hftrainer.sh: Hugging Face's Trainer under --fake, with
# what its users turn on: fp16 (GradScaler), gradient checkpointing,
# DataLoader workers, evaluation, checkpoints every 2 steps, at most one
# kept (save_total_limit), the best model loaded at the end.
import os
import sys
import torch
from torch.utils.data import Dataset
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments


class Rand(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 500, (128,), generator=g)
        return {"input_ids": ids, "labels": ids.clone()}


cfg = LlamaConfig(vocab_size=500, hidden_size=128, intermediate_size=256,
                  num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4)
model = LlamaForCausalLM(cfg)
args = TrainingArguments(
    output_dir="out", max_steps=6, per_device_train_batch_size=8,
    per_device_eval_batch_size=8, fp16=True, gradient_checkpointing=True,
    dataloader_num_workers=2, save_steps=2, eval_strategy="steps",
    eval_steps=2, logging_steps=1, report_to=[], save_total_limit=1,
    load_best_model_at_end=True, metric_for_best_model="loss")
tr = Trainer(model=model, args=args, train_dataset=Rand(), eval_dataset=Rand())
tr.train()
print("cuda", torch.cuda.is_available(), torch.cuda.device_count())
print("steps", tr.state.global_step)
print("old", os.path.exists("out/checkpoint-1/model.safetensors"))
