"""Review-sentiment classifier (small transformer encoder) fine-tuned with transformers.Trainer on CPU over gloo.
The model also returns its pooled sentence embedding (used by the retrieval demo); accuracy and macro-F1 are
computed in compute_metrics. Logs go through rich's RichHandler, as the team's other tools do."""
import logging
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from rich.logging import RichHandler
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments, set_seed
from transformers.utils import logging as hf_logging

RANK = int(os.environ.get("RANK", "0"))
logging.basicConfig(level=logging.INFO, format=f"[rank{RANK}] %(message)s", datefmt="[%X]",
                    handlers=[RichHandler(rich_tracebacks=False, show_path=True)])
log = logging.getLogger("sentiment")
hf_logging.set_verbosity_info()
hf_logging.disable_default_handler()
hf_logging.enable_propagation()

VOCAB, MAXLEN, NCLS = 5000, 40, 3


class Reviews(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.y = torch.randint(0, NCLS, (n,), generator=g)
        self.ids = (self.y[:, None] * 331 + torch.randint(0, 900, (n, MAXLEN), generator=g)) % VOCAB

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.y[i]}


class SentimentEncoder(nn.Module):
    def __init__(self, d=128):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 256, batch_first=True), 2)
        self.head = nn.Linear(d, NCLS)

    def forward(self, input_ids, labels=None):
        pooled = self.enc(self.emb(input_ids)).mean(1)
        logits = self.head(pooled)
        out = {"logits": logits, "sentence_embedding": pooled}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits, labels)
        return out


def compute_metrics(eval_pred):
    preds = eval_pred.predictions.argmax(-1)
    labels = eval_pred.label_ids
    acc = float((preds == labels).mean())
    f1s = []
    for c in range(NCLS):
        tp = np.sum((preds == c) & (labels == c))
        fp = np.sum((preds == c) & (labels != c))
        fn = np.sum((preds != c) & (labels == c))
        f1s.append(2 * tp / max(2 * tp + fp + fn, 1))
    return {"accuracy": acc, "macro_f1": float(np.mean(f1s))}


def main():
    set_seed(13)
    args = TrainingArguments(output_dir="runs/sentiment-enc", use_cpu=True, ddp_backend="gloo", ddp_timeout=30,
                             per_device_train_batch_size=16, per_device_eval_batch_size=64, learning_rate=5e-4,
                             max_steps=300, logging_steps=20, eval_strategy="steps", eval_steps=100,
                             save_strategy="no", report_to="none", disable_tqdm=True, seed=13)
    log.info("world_size=%s train=%d eval=%d", os.environ.get("WORLD_SIZE"), 24000, 1500)
    trainer = Trainer(model=SentimentEncoder(), args=args, train_dataset=Reviews(24000, 0),
                      eval_dataset=Reviews(1500, 1), compute_metrics=compute_metrics)
    trainer.train()
    trainer.save_model()
    log.info("done")


if __name__ == "__main__":
    main()
