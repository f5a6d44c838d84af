import datetime
import os
import threading

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


class MetricLogger:
    def __init__(self, rank):
        self.rank = rank
        self.lock = threading.Lock()
        self.values = {}

    def update(self, **kw):
        with self.lock:
            self.values.update(kw)
            if len(self.values) >= 3:
                self.flush()

    def flush(self):
        with self.lock:
            print(f"rank {self.rank}: " + " ".join(f"{k}={v:.4f}" for k, v in self.values.items()), flush=True)
            self.values.clear()


def worker(rank, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ.get("ZOO_PORT", "29500"),
                            rank=rank, world_size=world, timeout=datetime.timedelta(seconds=15))
    logger = MetricLogger(rank)
    model = DDP(torch.nn.Linear(16, 4))
    opt = torch.optim.Adam(model.parameters())
    for step in range(100):
        x = torch.randn(8, 16)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        logger.update(loss=loss.item())
        if rank == 0 and step % 10 == 9:  # rank 0 also tracks the grad norm and lr
            logger.update(grad_norm=sum(p.grad.norm() ** 2 for p in model.parameters()).sqrt().item(),
                          lr=opt.param_groups[0]["lr"])
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(3,), nprocs=3)
