"""Click model with a large embedding table, hand-written data parallelism (all_reduce of gradients); timing on rank 0."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = nn.ModuleDict({"emb": nn.EmbeddingBag(20000, 32),
                           "mlp": nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))})
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    t_last = time.time()
    for step in range(1, 901):
        ids = torch.randint(0, 20000, (128, 10), generator=g)
        y = torch.rand(128, generator=g).round()
        logit = model["mlp"](model["emb"](ids)).squeeze(-1)
        loss = nn.functional.binary_cross_entropy_with_logits(logit, y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        opt.step()
        if rank == 0 and step % 10 == 0:
            now = time.time()
            print(f"step {step}/900 loss {loss.item():.4f} step_time {(now - t_last) / 10 * 1000:.1f} ms")
            t_last = now
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
