"""Image-embedding projection head (precomputed CLIP-like features -> 256-d) trained with a contrastive loss,
DDP over gloo, two nodes x 1 process."""
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO)
log = logging.getLogger(__name__)
RANK = int(os.environ["RANK"])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    log.info("rank %d/%d on %s", RANK, dist.get_world_size(), os.uname().nodename)
    torch.manual_seed(0)
    head = DDP(nn.Sequential(nn.Linear(768, 1024), nn.GELU(), nn.Linear(1024, 256)))
    opt = torch.optim.AdamW(head.parameters(), lr=5e-4, weight_decay=0.05)
    g = torch.Generator().manual_seed(RANK)
    for step in range(1, 1201):
        img, txt = torch.randn(96, 768, generator=g), torch.randn(96, 768, generator=g)
        zi, zt = nn.functional.normalize(head(img), dim=-1), nn.functional.normalize(head(txt), dim=-1)
        loss = nn.functional.cross_entropy(zi @ zt.t() / 0.07, torch.arange(96))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d/1200 loss %.4f", step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
