"""Review-rating regressor with accelerate; every process streams its own gzipped jsonl parts, synced from the
dataset bucket by the node's prep script."""
import glob
import gzip
import json

import torch
import torch.nn as nn
from accelerate import Accelerator

VOCAB = 8000


def encode(text):
    return [hash(w) % VOCAB for w in text.split()][:32] or [0]


def batches(files, bs=32):
    buf = []
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                buf.append((encode(r["text"]), float(r["stars"])))
                if len(buf) == bs:
                    ids = [torch.tensor(t) for t, _ in buf]
                    offsets = torch.tensor([0] + [len(t) for t in ids[:-1]]).cumsum(0)
                    yield torch.cat(ids), offsets, torch.tensor([s for _, s in buf])
                    buf = []


class Rater(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.head = nn.EmbeddingBag(VOCAB, 64, mode="mean"), nn.Linear(64, 1)

    def forward(self, ids, offsets):
        return self.head(self.emb(ids, offsets)).squeeze(1)


def main():
    acc = Accelerator(cpu=True)
    files = sorted(glob.glob(f"data/part-{acc.process_index:02d}-*.jsonl.gz"))
    acc.print(f"{acc.num_processes} processes; process 0 reads {len(files)} parts")
    model = Rater()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    step = 0
    for ids, offsets, y in batches(files):
        loss = nn.functional.mse_loss(model(ids, offsets), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        step += 1
        if step % 25 == 0:
            acc.print(f"step {step}: mse {loss.item():.4f}")
    acc.print(f"finished after {step} steps")
    acc.wait_for_everyone()
    acc.end_training()


if __name__ == "__main__":
    main()
