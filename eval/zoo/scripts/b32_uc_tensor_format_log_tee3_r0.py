"""Review-helpfulness regressor (GRU encoder), DDP over gloo, 3 ranks. Per-example losses are weighted by the
reviews' vote counts; rank 0 logs the running loss every 50 steps with python logging."""
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s [%(levelname)s] %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("helpful")


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(8000, 64)
        self.gru = nn.GRU(64, 96, batch_first=True)
        self.head = nn.Linear(96, 1)

    def forward(self, x):
        return self.head(self.gru(self.emb(x))[1][-1]).squeeze(-1)


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Encoder())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    log.info("rank %d/%d: 400 steps, batch 32", rank, world)
    t0 = time.time()
    running = 0.0
    for step in range(1, 401):
        x = torch.randint(0, 8000, (32, 40), generator=g)
        y = torch.rand(32, generator=g)
        votes = torch.randint(1, 50, (32,), generator=g).float()
        per_example = F.mse_loss(model(x), y, reduction="none")
        loss = (per_example * votes.log1p()).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        running = 0.9 * running + 0.1 * per_example.detach() if step > 1 else per_example.detach()
        if rank == 0 and step % 50 == 0:
            log.info(f"step {step}/400 | loss {running:.4f} | {(time.time() - t0) / step * 1000:.1f} ms/step")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
