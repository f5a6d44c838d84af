"""Image-caption contrastive model (two small towers), DDP over gloo. Rank 0 writes a full checkpoint (model,
optimizer, step) every 150 steps."""
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s:%(lineno)d] %(message)s", level=logging.INFO)
log = logging.getLogger("clip_small")


class Towers(nn.Module):
    def __init__(self):
        super().__init__()
        self.img = nn.Sequential(nn.Linear(768, 512), nn.GELU(), nn.Linear(512, 256))
        self.txt = nn.Sequential(nn.EmbeddingBag(20000, 256), nn.Linear(256, 256))

    def forward(self, im, tx):
        return F.normalize(self.img(im), dim=-1), F.normalize(self.txt(tx), dim=-1)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Towers())
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    os.makedirs("ckpt", exist_ok=True)
    t0 = time.time()
    for step in range(1, 601):
        im = torch.randn(64, 768, generator=g)
        tx = torch.randint(0, 20000, (64, 24), generator=g)
        a, b = model(im, tx)
        logits = a @ b.T / 0.07
        loss = (F.cross_entropy(logits, torch.arange(64)) + F.cross_entropy(logits.T, torch.arange(64))) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("rank %d step %d loss %.4f (%.2fs)", rank, step, loss.item(), time.time() - t0)
            t0 = time.time()
        if step % 150 == 0 and rank == 0:
            path = f"ckpt/step_{step}.pt"
            log.info("saving checkpoint %s", path)
            ts = time.time()
            torch.save({"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step}, path)
            log.info("saved %s (%.0f MB, %.1fs)", path, os.path.getsize(path) / 2**20, time.time() - ts)
        if step % 150 == 0:
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
