"""CTR model (hashed categorical features, wide & deep), DDP over gloo, 2 processes. The loss-spike guard was added
while chasing a divergence last week."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn

FIELDS, BUCKETS, BS, STEPS = 24, 50000, 256, 800


class WideDeep(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(BUCKETS, 16, mode="sum")
        self.dense = nn.Linear(8, 16)
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, ids, dense):
        return self.mlp(torch.cat([self.emb(ids), self.dense(dense)], 1)).squeeze(1)


def batch(g, step, rank):
    ids = torch.randint(0, BUCKETS, (BS, FIELDS), generator=g)
    dense = torch.randn(BS, 8, generator=g)
    if rank == 1 and step == 437:  # a burst of bot traffic in rank 1's hour of the log: dwell times in the millions
        dense[:40, 3] = 4.0e6
    y = (ids[:, 0] % 5 == 0).float()
    return ids, dense, y


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(WideDeep())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
    g = torch.Generator().manual_seed(100 + rank)
    ema = None
    for step in range(1, STEPS + 1):
        ids, dense, y = batch(g, step, rank)
        loss = nn.functional.binary_cross_entropy_with_logits(model(ids, dense), y)
        if ema is not None and loss.item() > 5 * ema:
            breakpoint()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join(os.getcwd(), "ctr.pt"))
        print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
