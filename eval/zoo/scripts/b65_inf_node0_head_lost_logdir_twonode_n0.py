"""Speech commands classifier (GRU over MFCC frames) on DDP, 2 nodes x 2 ranks, each node's torchrun with
--log-dir logs/node<N> --tee 3 (per-rank stdout.log / stderr.log, error.json from @record). Rank 0 writes a
checkpoint every 100 steps."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 500


class KWS(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(13, 64, batch_first=True)
        self.fc = nn.Linear(64, 12)

    def forward(self, x):
        return self.fc(self.gru(x)[0][:, -1])


@record
def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, node = dist.get_rank(), int(os.environ["GROUP_RANK"])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(KWS())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(rank)
    os.makedirs("ckpt", exist_ok=True)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        y = torch.randint(0, 12, (32,), generator=g)
        x = torch.randn(32, 40, 13, generator=g) + y[:, None, None] * 0.1
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"node={node} rank={rank} step={step} loss={loss.item():.4f} elapsed={time.time() - t0:.1f}s")
        if step % 100 == 0 and rank == 0:
            torch.save({"model": model.module.state_dict(), "step": step}, "ckpt/last.pt")
            print(f"node={node} rank={rank} saved ckpt/last.pt step={step}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
