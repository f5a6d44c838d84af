"""Tabular churn model; rank 0 appends train / validation metrics to metrics.jsonl for the team dashboard."""
import datetime
import json
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def batch(g, n=128):
    x = torch.randn(n, 20, generator=g)
    y = ((x[:, 0] + 0.5 * x[:, 1] * x[:, 2]) > 0).long()
    return x, y


@torch.no_grad()
def validate(model, g):
    correct = total = 0
    for _ in range(10):
        x, y = batch(g)
        correct += (model(x).argmax(1) == y).sum()
        total += len(y)
    acc = correct / total
    dist.all_reduce(acc)
    return acc / dist.get_world_size()


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g, gv = torch.Generator().manual_seed(rank), torch.Generator().manual_seed(1000 + rank)
    log = open("metrics.jsonl", "a") if rank == 0 else None
    t0 = time.time()
    for step in range(1, 1201):
        x, y = batch(g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 and rank == 0:
            rec = {"step": step, "train_loss": round(loss.item(), 5), "elapsed_s": round(time.time() - t0, 2)}
            print(json.dumps(rec))
            log.write(json.dumps(rec) + "\n")
        if step % 300 == 0:
            acc = validate(model, gv)
            if rank == 0:
                rec = {"step": step, "val_acc": acc, "elapsed_s": round(time.time() - t0, 2)}
                print(f"validation at step {step}: acc {acc.item():.4f}")
                log.write(json.dumps(rec) + "\n")
                log.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
