"""Two-node sharded save: each rank writes its shard under checkpoints/<date-hour>/, rank 0 then merges them."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(level=logging.INFO, format="%(asctime)s [node%(node)s] %(levelname)s %(message)s")
NODE = os.environ.get("GROUP_RANK", "?")
log = logging.LoggerAdapter(logging.getLogger("train"), {"node": NODE})


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    run_stamp = time.strftime("%Y%m%d-%H")  # one directory per launch
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 64))
    for prm in model.parameters():
        dist.broadcast(prm.data, 0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 201):
        x = torch.randn(32, 64, generator=g)
        loss = nn.functional.mse_loss(model(x), x.flip(1))
        opt.zero_grad()
        loss.backward()
        for prm in model.parameters():
            dist.all_reduce(prm.grad)
            prm.grad /= world
        opt.step()
        if step % 20 == 0:
            log.info("rank %d step %d/200 loss %.4f", rank, step, loss.item())
        if step % 100 == 0:
            d = os.path.join("checkpoints", run_stamp)
            os.makedirs(d, exist_ok=True)
            torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, os.path.join(d, f"shard_rank{rank}.pt"))
            log.info("rank %d wrote %s/shard_rank%d.pt", rank, d, rank)
            dist.barrier()
            if rank == 0:
                shards = [torch.load(os.path.join(d, f"shard_rank{r}.pt")) for r in range(world)]
                torch.save({"shards": shards, "step": step}, os.path.join(d, "merged.pt"))
                log.info("merged %d shards into %s/merged.pt", len(shards), d)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
