"""Topic classifier fine-tuned with transformers.Trainer (a small BERT built from a config), DDP over gloo,
2 processes; evaluation every 60 steps with accuracy and macro-F1."""
import logging
import random

import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
VOCAB, SEQ, LABELS = 6000, 40, 8


class Docs(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        rng = random.Random(seed)
        self.rows = [([rng.randrange(5, VOCAB) for _ in range(SEQ)], rng.randrange(LABELS)) for _ in range(n)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        ids, y = self.rows[i]
        return {"input_ids": torch.tensor([y + 5] + ids[1:]), "labels": torch.tensor(y)}


def compute_metrics(p):
    preds = p.predictions.argmax(-1)
    acc = float((preds == p.label_ids).mean())
    f1s = []
    for c in range(LABELS):
        tp = ((preds == c) & (p.label_ids == c)).sum()
        f1s.append(2 * tp / max(1, (preds == c).sum() + (p.label_ids == c).sum()))
    return {"accuracy": acc, "macro_f1": float(np.mean(f1s))}


def main():
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=SEQ, num_labels=LABELS,
                     output_hidden_states=True)  # hidden states kept for the probing notebook
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir="out/topics", per_device_train_batch_size=32, per_device_eval_batch_size=64,
                             max_steps=300, learning_rate=5e-4, logging_steps=20, eval_strategy="steps",
                             eval_steps=60, save_strategy="no", use_cpu=True, ddp_backend="gloo", ddp_timeout=20,
                             report_to=[], disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=Docs(12000, 0), eval_dataset=Docs(640, 1),
                      compute_metrics=compute_metrics)
    trainer.train()


if __name__ == "__main__":
    main()
