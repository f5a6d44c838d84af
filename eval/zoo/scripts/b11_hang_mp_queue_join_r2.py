"""Click-through-rate model. Every 100 steps each rank scores its validation file; the per-example records and the
metrics are computed in a helper process so a slow metrics step does not hold the training process's GIL."""
import datetime
import json
import multiprocessing as mp
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class CTR(nn.Module):
    def __init__(self, n_feat=32, d=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_feat, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def metrics_worker(ids, probs, labels, q):
    records = [{"id": i, "p": round(p, 6), "y": y, "err": round(abs(p - y), 6)} for i, p, y in zip(ids, probs, labels)]
    pos = [r["p"] for r in records if r["y"] == 1]
    neg = [r["p"] for r in records if r["y"] == 0]
    hits = sum((p > n) + 0.5 * (p == n) for p in pos[:200] for n in neg[:200])
    auc = hits / max(1, min(len(pos), 200) * min(len(neg), 200))
    q.put({"auc": auc, "records": records})


def evaluate(model, val, rank, step):
    with torch.no_grad():
        probs = torch.sigmoid(model(val["x"])).tolist()
    q = mp.Queue()
    p = mp.Process(target=metrics_worker, args=(val["ids"], probs, val["y"].tolist(), q))
    p.start()
    p.join()
    out = q.get()
    with open(f"preds/rank{rank}_step{step}.jsonl", "w") as f:
        for r in out["records"]:
            f.write(json.dumps(r) + "\n")
    return out["auc"]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(CTR())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    val = torch.load(f"data/val_{rank}.pt")
    print(f"[rank {rank}] {len(val['ids'])} validation examples", flush=True)
    os.makedirs("preds", exist_ok=True)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for step in range(1, 501):
        x = torch.randn(64, 32, generator=g)
        y = (x[:, :4].sum(1) > 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f} ({(time.time() - t) * 40:.1f} ms/step)", flush=True)
            t = time.time()
        if step % 100 == 0:
            auc = evaluate(model.module, val, rank, step)
            print(f"[rank {rank}] step {step} val_auc {auc:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
