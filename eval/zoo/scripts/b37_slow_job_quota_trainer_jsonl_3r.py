"""Intent classifier (small transformer encoder) fine-tuned with transformers.Trainer on CPU over gloo, three
processes. A callback writes one JSON line per rank every 20 steps with the rank's own mean step time (the
platform's metrics pipeline reads them); Trainer's own console output is left on."""
import json
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import Trainer, TrainerCallback, TrainingArguments, set_seed

VOCAB, MAXLEN, NCLS = 6000, 32, 24


class Queries(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.y = torch.randint(0, NCLS, (n,), generator=g)
        self.ids = (self.y[:, None] * 211 + torch.randint(0, 700, (n, MAXLEN), generator=g)) % VOCAB

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.y[i]}


class IntentEncoder(nn.Module):
    def __init__(self, d=128):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 256, batch_first=True), 2)
        self.head = nn.Linear(d, NCLS)

    def forward(self, input_ids, labels=None):
        logits = self.head(self.enc(self.emb(input_ids)).mean(1))
        return {"loss": F.cross_entropy(logits, labels), "logits": logits}


class StepTimeJson(TrainerCallback):
    def __init__(self, every=20):
        self.every, self.t0 = every, None
        self.rank = int(os.environ.get("RANK", 0))

    def on_step_begin(self, args, state, control, **kw):
        if self.t0 is None:
            self.t0 = time.time()

    def on_step_end(self, args, state, control, **kw):
        if state.global_step % self.every == 0:
            dt = (time.time() - self.t0) / self.every
            print(json.dumps({"ts": round(time.time(), 3), "event": "step_time", "rank": self.rank,
                              "global_step": state.global_step, "max_steps": state.max_steps,
                              "step_time_ms": round(dt * 1000, 1)}), flush=True)
            self.t0 = time.time()


def main():
    set_seed(7)
    args = TrainingArguments(output_dir="out/intent-enc", use_cpu=True, ddp_backend="gloo", ddp_timeout=30,
                             per_device_train_batch_size=16, learning_rate=5e-4, max_steps=240, logging_steps=40,
                             save_strategy="no", report_to="none", disable_tqdm=True, seed=7)
    trainer = Trainer(model=IntentEncoder(), args=args, train_dataset=Queries(30000, 0), callbacks=[StepTimeJson()])
    trainer.train()


if __name__ == "__main__":
    main()
