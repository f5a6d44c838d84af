"""Text classifier with a custom loop and tqdm; documents are tokenized on first use and cached, so the
first pass over the data is slower than the rest."""
import json
import zlib

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

V = 2048


class Docs(torch.utils.data.Dataset):
    def __init__(self, path):
        self.rows = [json.loads(line) for line in open(path)]
        self.cache = {}

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        if i not in self.cache:
            ids = [zlib.crc32(w.encode()) % V for w in self.rows[i]["text"].split()]
            x = torch.zeros(V)
            x.index_add_(0, torch.tensor(ids), torch.ones(len(ids)))
            self.cache[i] = x
        return self.cache[i], self.rows[i]["label"]


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = Docs(f"data/docs_{rank}.jsonl")
    dl = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(V, 384), nn.ReLU(), nn.Linear(384, 4)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(6):
        bar = tqdm(dl, desc=f"Epoch {epoch}", disable=rank != 0)
        for x, y in bar:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.set_postfix(loss=loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
