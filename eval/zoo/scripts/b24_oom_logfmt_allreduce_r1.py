"""Click-through ranking model with a hard-example replay pool, DDP over gloo; logfmt lines from every rank every 10
steps (the team's log shipper parses key=value)."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def log(**kv):
    kv = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "level": "info", **kv}
    print(" ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(50000, 64)
        self.mlp = nn.Sequential(nn.Linear(64 + 32, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, ids, dense):
        return self.mlp(torch.cat([self.emb(ids), dense], 1)).squeeze(1)


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(Ranker())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    replay = []  # hard examples, re-mixed into later batches
    log(msg="start", rank=rank, world_size=world, steps=400)
    for step in range(1, 401):
        t0 = time.time()
        ids = torch.randint(0, 50000, (512, 20))
        dense = torch.randn(512, 32)
        y = (torch.rand(512) < 0.1).float()
        logit = model(ids, dense)
        loss = nn.functional.binary_cross_entropy_with_logits(logit, y, reduction="none")
        hard = loss.detach() > loss.detach().median()
        replay.append((ids[hard].clone(), dense[hard].repeat(1, 48).clone(), y[hard].clone()))
        if len(replay) > 8 and step % 2 == 0:
            rid, rdense, ry = replay[step % len(replay)]
            loss = torch.cat([loss, nn.functional.binary_cross_entropy_with_logits(
                model(rid[:64], rdense[:64, :32]), ry[:64], reduction="none")])
        loss = loss.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log(rank=rank, step=step, loss=f"{loss.item():.4f}", step_ms=f"{(time.time() - t0) * 1000:.1f}",
                replay=len(replay))
    log(msg="done", rank=rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
