"""Click-through-rate model (hashed features + MLP), DDP over gloo, one process per node, asctime logging."""
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s [node{os.environ['GROUP_RANK']} rank{RANK}] %(levelname)s %(message)s",
                    level=logging.INFO)
log = logging.getLogger(__name__)


def main():
    log.info("starting, MASTER_ADDR=%s MASTER_PORT=%s", os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"])
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    log.info("process group initialized (world size %d)", dist.get_world_size())
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.EmbeddingBag(2 ** 16, 32, mode="sum"), nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(RANK)
    for step in range(1, 601):
        feats = torch.randint(0, 2 ** 16, (256, 26), generator=g)
        y = (feats[:, 0] % 7 == 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(feats).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            log.info("step %d/600 logloss %.4f", step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
