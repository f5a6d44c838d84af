"""Small GPT-2 style model continued-pretrained on ticket text with transformers.Trainer, two nodes x two
processes over gloo; checkpoints go to the team volume mounted at ./checkpoints. A callback writes one JSON line
per logging event (step, loss, step time) for the metrics pipeline."""
import json
import os
import time

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments


class Tickets(Dataset):
    def __init__(self, n=40000, seq=32, vocab=4000):
        self.x = torch.randint(0, vocab, (n, seq), generator=torch.Generator().manual_seed(3))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


class JsonLines(TrainerCallback):
    def __init__(self):
        self.t0 = time.time()
        self.rank = int(os.environ.get("RANK", 0))
        self.node = int(os.environ.get("GROUP_RANK", 0))

    def on_log(self, args, state, control, logs=None, **kw):
        dt = (time.time() - self.t0) / args.logging_steps
        self.t0 = time.time()
        print(json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "event": "log", "node": self.node,
                          "rank": self.rank, "step": state.global_step, "ms_per_step": round(dt * 1000, 1),
                          **{k: v for k, v in (logs or {}).items()}}), flush=True)

    def on_save(self, args, state, control, **kw):
        print(json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "event": "checkpoint_saved", "node": self.node,
                          "rank": self.rank, "step": state.global_step}), flush=True)


def main():
    model = GPT2LMHeadModel(GPT2Config(vocab_size=4000, n_positions=32, n_embd=128, n_layer=2, n_head=4,
                                       bos_token_id=0, eos_token_id=0))
    args = TrainingArguments(output_dir="checkpoints/ticket-lm", use_cpu=True, ddp_backend="gloo", ddp_timeout=30,
                             per_device_train_batch_size=8, max_steps=300, logging_steps=10, save_steps=50,
                             report_to="none", learning_rate=3e-4, disable_tqdm=True, log_level="warning")
    trainer = Trainer(model=model, args=args, train_dataset=Tickets(), callbacks=[JsonLines()])
    trainer.train()


if __name__ == "__main__":
    main()
