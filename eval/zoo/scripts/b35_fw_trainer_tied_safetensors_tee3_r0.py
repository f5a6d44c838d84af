"""Small causal LM for product-search query completion (decoder-only, weight tying between the input embedding and
the output projection), trained from scratch with transformers.Trainer."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments


class Queries(Dataset):
    def __init__(self, n, vocab, seq, seed):
        g = torch.Generator().manual_seed(seed)
        start = torch.randint(0, vocab, (n, 1), generator=g)
        self.ids = (start + torch.arange(seq)[None] * torch.randint(1, 5, (n, 1), generator=g)) % vocab

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class QueryLM(nn.Module):
    def __init__(self, vocab=4000, d=128, layers=2, seq=24):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.tok.weight  # tie input and output embeddings
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, input_ids, labels=None):
        t = input_ids.shape[1]
        h = self.tok(input_ids) + self.pos(torch.arange(t))
        h = self.norm(self.blocks(h, mask=self.mask[:t, :t], is_causal=True))
        logits = self.lm_head(h)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten())
        return {"loss": loss, "logits": logits}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--output-dir", default="out/query-lm")
    ap.add_argument("--max-steps", type=int, default=400)
    ap.add_argument("--save-steps", type=int, default=150)
    a = ap.parse_args()
    args = TrainingArguments(output_dir=a.output_dir, max_steps=a.max_steps, per_device_train_batch_size=16,
                             learning_rate=5e-4, warmup_steps=40, logging_steps=25, save_steps=a.save_steps,
                             save_total_limit=2, use_cpu=True, ddp_backend="gloo", report_to="none",
                             disable_tqdm=True, seed=7)
    trainer = Trainer(model=QueryLM(), args=args, train_dataset=Queries(40000, 4000, 24, 0))
    trainer.train()


if __name__ == "__main__":
    main()
