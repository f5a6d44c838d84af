# Bag-of-words sentiment model trained with accelerate; each process reads its own shard of raw reviews.
import json
import time
import zlib

import torch
import torch.nn as nn
from accelerate import Accelerator

VOCAB = 4096
EPOCHS = 1


def tokenize(text):
    # user's own hashing tokenizer (no tokenizer download on the cluster)
    return [zlib.crc32(w.lower().strip(".,!?").encode()) % VOCAB for w in text.split()]


class Reviews(torch.utils.data.Dataset):
    def __init__(self, path):
        self.rows = [json.loads(line) for line in open(path)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        bow = torch.zeros(VOCAB)
        for t in tokenize(r["text"]):
            bow[t] += 1.0
        return bow, torch.tensor(r["label"])


def main():
    acc = Accelerator(cpu=True)
    ds = Reviews(f"data/reviews_part{acc.process_index}.jsonl")
    dl = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=False)
    model = nn.Sequential(nn.Linear(VOCAB, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)  # each process keeps its own shard's loader
    for epoch in range(1, EPOCHS + 1):
        t0 = time.time()
        for b, (x, y) in enumerate(dl, 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            if b % 10 == 0:
                acc.print(f"Epoch {epoch} Batch {b}/{len(dl)} loss={loss.item():.4f} {10 / (time.time() - t0):.1f} it/s")
                t0 = time.time()
    acc.print("finished")


if __name__ == "__main__":
    main()
