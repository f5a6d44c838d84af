"""Small causal LM for support-ticket text fine-tuned with transformers.Trainer (a tiny GPT-2 built from a config),
DDP over gloo, 2 ranks under torchrun. Token accuracy on the validation split every 40 steps through
compute_metrics."""
import logging
import random

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
log = logging.getLogger(__name__)
VOCAB, SEQ = 12000, 64


class Tickets(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        rng = random.Random(seed)
        self.rows = [[rng.randrange(2, VOCAB) for _ in range(8)] for _ in range(n)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        base = self.rows[i]
        ids = torch.tensor([base[(k * 3) % 8] + (k % 5) for k in range(SEQ)]).clamp(max=VOCAB - 1)
        return {"input_ids": ids, "labels": ids.clone()}


def token_accuracy(p):
    logits, labels = p.predictions, p.label_ids
    pred = np.argmax(logits[:, :-1], axis=-1)
    return {"token_acc": float((pred == labels[:, 1:]).mean())}


def main():
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=64, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(cfg)
    args = TrainingArguments(output_dir="runs/tickets-lm", per_device_train_batch_size=16,
                             per_device_eval_batch_size=16, max_steps=120, learning_rate=5e-4, logging_steps=10,
                             eval_strategy="steps", eval_steps=40, save_strategy="no", use_cpu=True,
                             ddp_backend="gloo", ddp_timeout=20, report_to=[])
    trainer = Trainer(model=model, args=args, train_dataset=Tickets(4000, 0), eval_dataset=Tickets(600, 1),
                      compute_metrics=token_accuracy)
    trainer.train()
    log.info("training done")


if __name__ == "__main__":
    main()
