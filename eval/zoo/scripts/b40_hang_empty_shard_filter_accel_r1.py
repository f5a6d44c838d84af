"""Review-sentiment fine-tune on accelerate (CPU test run of the GPU recipe). Each process reads its own
pre-split shard data/reviews-0000{i}.jsonl and keeps English reviews of at least 12 tokens; one epoch, then the
validation loss is averaged over processes."""
import json
import math
import time
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs

VOCAB = 30000


def load_shard(path):
    keep, total = [], 0
    for line in open(path):
        total += 1
        r = json.loads(line)
        if r["lang"] != "en" or len(r["tokens"]) < 12:
            continue
        keep.append((r["tokens"][:64], int(r["stars"] >= 4)))
    return keep, total


def batches(rows, bs):
    for i in range(0, len(rows) - bs + 1, bs):
        chunk = rows[i:i + bs]
        tok = torch.zeros(bs, 64, dtype=torch.long)
        for j, (t, _) in enumerate(chunk):
            tok[j, :len(t)] = torch.tensor(t)
        yield tok, torch.tensor([lab for _, lab in chunk])


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 128, padding_idx=0)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(128, 4, 256, batch_first=True), 2)
        self.head = nn.Linear(128, 2)

    def forward(self, tok):
        return self.head(self.enc(self.emb(tok), src_key_padding_mask=tok == 0).mean(1))


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    i = acc.process_index
    rows, total = load_shard(f"data/reviews-{i:05d}.jsonl")
    print(f"[process {i}] data/reviews-{i:05d}.jsonl: kept {len(rows)} of {total} reviews "
          f"({math.floor(len(rows) / 32)} steps/epoch)", flush=True)
    val = rows[-256:]
    train = rows[:-256] if len(rows) > 256 else []
    model = Classifier()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    model, opt = acc.prepare(model, opt)
    model.train()
    t0 = time.time()
    for step, (tok, y) in enumerate(batches(train, 32), 1):
        loss = F.cross_entropy(model(tok), y)
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            print(f"[process {i}] epoch 0 step {step} loss {loss.item():.4f} {(time.time() - t0) * 100:.0f} ms/step",
                  flush=True)
            t0 = time.time()
    print(f"[process {i}] epoch 0 done, waiting for the other processes", flush=True)
    acc.wait_for_everyone()
    print(f"[process {i}] validating", flush=True)
    model.eval()
    with torch.no_grad():
        losses = [F.cross_entropy(model(tok), y) for tok, y in batches(val, 32)]
    vloss = torch.stack(losses).mean() if losses else torch.tensor(0.0)
    vloss = acc.reduce(vloss.reshape(1), reduction="mean")
    if acc.is_main_process:
        print(f"val_loss {vloss.item():.4f}", flush=True)
    acc.wait_for_everyone()


if __name__ == "__main__":
    main()
