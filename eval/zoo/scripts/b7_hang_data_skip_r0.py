"""Extractive QA head fine-tune with accelerate; examples longer than --max-len are dropped from each batch."""
import argparse
import datetime
import json

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs


class QAHead(nn.Module):
    def __init__(self, vocab=8000, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * d, 2)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def collate(rows, max_len):
    rows = [r for r in rows if len(r["ids"]) <= max_len]  # too long for the model: drop
    if not rows:
        return None
    ids = torch.zeros(len(rows), max_len, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r["ids"])] = torch.tensor(r["ids"])
    return ids, torch.tensor([r["start"] for r in rows]), torch.tensor([r["end"] for r in rows])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-len", type=int, default=96)
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=15))])
    rows = [json.loads(l) for l in open(f"data/squadish_{acc.process_index}.jsonl")]
    model = QAHead()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    for epoch in range(2):
        for step, i in enumerate(range(0, len(rows), args.batch_size)):
            batch = collate(rows[i:i + args.batch_size], args.max_len)
            if batch is None:
                continue
            ids, s, e = batch
            logits = model(ids)
            loss = nn.functional.cross_entropy(logits[..., 0], s) + nn.functional.cross_entropy(logits[..., 1], e)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            if step % 10 == 0:
                avg = acc.gather(loss.detach()[None]).mean()
                acc.print(f"epoch {epoch} step {step} loss {avg.item():.4f}")
    acc.wait_for_everyone()
    acc.print("done")


if __name__ == "__main__":
    main()
