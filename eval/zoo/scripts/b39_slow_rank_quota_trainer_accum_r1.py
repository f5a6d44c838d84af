"""Review-helpfulness regressor fine-tuned with transformers.Trainer (CPU, gloo under torchrun) with gradient
accumulation: 4 micro-batches of 8 per optimizer step. A callback logs each rank's optimizer-step time."""
import os
import time

import torch
import torch.nn as nn
from transformers import Trainer, TrainerCallback, TrainingArguments

RANK = int(os.environ.get("RANK", 0))


class Reviews(torch.utils.data.Dataset):
    def __init__(self, n=20000, vocab=16000, seq=64):
        g = torch.Generator().manual_seed(11)
        self.ids = torch.randint(1, vocab, (n, seq), generator=g)
        self.y = (self.ids[:, :8].float().mean(-1) / vocab + 0.1 * torch.randn(n, generator=g))

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.y[i]}


class Regressor(nn.Module):
    def __init__(self, vocab=16000, d=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 4, 256, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d, 1)

    def forward(self, input_ids, labels=None):
        pred = self.head(self.enc(self.emb(input_ids)).mean(1)).squeeze(-1)
        loss = nn.functional.mse_loss(pred, labels) if labels is not None else None
        return {"loss": loss, "logits": pred}


class StepTimer(TrainerCallback):
    def __init__(self):
        self.t = None

    def on_step_begin(self, args, state, control, **kw):
        if self.t is None:
            self.t = time.time()

    def on_step_end(self, args, state, control, **kw):
        if state.global_step % 10 == 0:
            dt = (time.time() - self.t) / 10
            print(f"[rank{RANK}] opt_step {state.global_step}/{state.max_steps} "
                  f"accum {args.gradient_accumulation_steps} step_time {dt * 1000:.0f} ms", flush=True)
            self.t = time.time()


def main():
    args = TrainingArguments(output_dir="out/helpfulness", per_device_train_batch_size=8,
                             gradient_accumulation_steps=4, max_steps=80, learning_rate=3e-4,
                             logging_steps=20, save_strategy="no", report_to=[], use_cpu=True,
                             ddp_backend="gloo", ddp_timeout=30, dataloader_num_workers=0, disable_tqdm=True)
    trainer = Trainer(model=Regressor(), args=args, train_dataset=Reviews(), callbacks=[StepTimer()])
    trainer.train()


if __name__ == "__main__":
    main()
