import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("trainer")


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    logging.basicConfig(format="%(asctime)s,%(msecs)03d %(levelname)s %(name)s:%(lineno)d] %(message)s",
                        datefmt="%Y-%m-%d %H:%M:%S", level=logging.INFO)
    log.info("rank %d/%d up, backend %s", rank, dist.get_world_size(), dist.get_backend())
    model = DDP(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)), bucket_cap_mb=1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t = time.time()
    for step in range(1, 1201):
        x = torch.randn(32, 256)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.01)
        if step % 5 == 0:
            log.info("rank %d step %d loss %.4f (%.1f ms/step)", rank, step, loss.item(), (time.time() - t) * 200)
            t = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
