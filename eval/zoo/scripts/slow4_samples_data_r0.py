"""Tabular classifier; every rank decodes its own shard of JSON records. Logs samples/sec every 50 steps."""
import json
import time

import torch
import torch.distributed as dist
import torch.nn as nn


class Records(torch.utils.data.Dataset):
    def __init__(self, path):
        self.lines = open(path).read().splitlines()

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        rec = json.loads(self.lines[i])
        feats = [float(v) for v in rec["features"]]
        hist = rec.get("history", [])
        agg = [sum(h["v"] for h in hist) / max(1, len(hist)), float(len(hist))]
        return torch.tensor(feats + agg), rec["label"]


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = Records(f"data/part-{rank:02d}.jsonl")
    dl = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=False, drop_last=True)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(66, 512), nn.ReLU(), nn.Linear(512, 512),
                                                              nn.ReLU(), nn.Linear(512, 5)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step, (x, y) in enumerate(dl, 1):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f} samples/sec {50 * 32 / (time.time() - t0):.1f}")
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
