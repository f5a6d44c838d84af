"""Session-based recommender (GRU4Rec-style), DDP over gloo, one rank per node, two nodes under torchrun with a c10d
rendezvous. Logs logfmt lines every 20 steps."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = 3000


class GRU4Rec(nn.Module):
    def __init__(self, items=20000, dim=64):
        super().__init__()
        self.emb = nn.Embedding(items, dim)
        self.gru = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, items)

    def forward(self, x):
        return self.out(self.gru(self.emb(x))[0][:, -1])


def logfmt(**kv):
    ts = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    print(f"ts={ts} " + " ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, node = dist.get_rank(), int(os.environ["GROUP_RANK"])
    logfmt(level="info", node=node, rank=rank, msg="process group ready", world=dist.get_world_size())
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(GRU4Rec())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randint(0, 20000, (64, 12), generator=g)
        y = torch.randint(0, 20000, (64,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            logfmt(level="info", node=node, rank=rank, step=step, loss=f"{loss.item():.4f}",
                   step_ms=f"{(time.time() - t0) / 20 * 1000:.1f}")
            t0 = time.time()
    dist.barrier()
    logfmt(level="info", node=node, rank=rank, msg="training done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
