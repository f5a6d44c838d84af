import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("train")


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s", level=logging.INFO)
    model = DDP(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(1, 251):
        t0 = time.perf_counter()
        x = torch.randn(32, 256)
        time.sleep(0.03)  # batch fetch
        t1 = time.perf_counter()
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        t2 = time.perf_counter()
        log.info("[rank%d] step %d loss %.4f step_time %.1fms data %.1fms fwd_bwd %.1fms", rank, step, loss.item(),
                 (t2 - t0) * 1000, (t1 - t0) * 1000, (t2 - t1) * 1000)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
