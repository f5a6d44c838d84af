"""Movie-rating factorisation model; cumulative elapsed time in the log, evaluation every 250 iterations and a
reshuffle of the full interaction index at every epoch boundary."""
import time
from datetime import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

ITERS, EVAL_EVERY, LOG_EVERY, BATCH = 1100, 250, 10, 256
N_USERS, N_ITEMS = 20000, 8000


class MF(nn.Module):
    def __init__(self):
        super().__init__()
        self.u, self.i = nn.Embedding(N_USERS, 32), nn.Embedding(N_ITEMS, 32)
        self.mlp = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, u, i):
        return self.mlp(torch.cat([self.u(u), self.i(i)], 1)).squeeze(1)


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(11)
    users = torch.randint(0, N_USERS, (240_000,), generator=g)
    items = torch.randint(0, N_ITEMS, (240_000,), generator=g)
    ratings = ((users % 5 + items % 3).float() / 2.0).clamp(0.5, 5.0)
    model = DDP(MF())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    per_rank = len(users) // world // BATCH
    start = time.time()
    it, epoch, pos = 0, 0, per_rank
    order = None
    while it < ITERS:
        if pos == per_rank:  # new epoch: reshuffle every interaction, take this rank's slice
            epoch += 1
            perm = torch.randperm(len(users), generator=torch.Generator().manual_seed(epoch))
            order = perm[rank::world]
            order = order[torch.argsort(users[order] % 64, stable=True)]  # group by user shard for cache locality
            pos = 0
            if rank == 0:
                print(f"[{datetime.now():%H:%M:%S}] epoch {epoch} start ({per_rank} iterations per epoch)")
        idx = order[pos * BATCH:(pos + 1) * BATCH]
        pos += 1
        it += 1
        loss = nn.functional.mse_loss(model(users[idx], items[idx]), ratings[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % LOG_EVERY == 0 and rank == 0:
            print(f"[{datetime.now():%H:%M:%S}] it: {it} loss: {loss.item():.4f} elapsed: {time.time() - start:.2f}s")
        if it % EVAL_EVERY == 0:
            with torch.no_grad():
                gv = torch.Generator().manual_seed(500 + rank)
                se = torch.zeros(2)
                for _ in range(30):
                    j = torch.randint(0, len(users), (2048,), generator=gv)
                    se += torch.tensor([((model.module(users[j], items[j]) - ratings[j]) ** 2).sum().item(), 2048])
                dist.all_reduce(se)
            if rank == 0:
                print(f"[{datetime.now():%H:%M:%S}] eval it: {it} rmse: {(se[0] / se[1]).sqrt():.4f} "
                      f"elapsed: {time.time() - start:.2f}s")
    dist.barrier()
    if rank == 0:
        print(f"[{datetime.now():%H:%M:%S}] done: {ITERS} iterations, {epoch} epochs, elapsed: {time.time() - start:.2f}s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
