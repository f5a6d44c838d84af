import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self):
        dist.init_process_group("gloo")
        self.rank = dist.get_rank()
        self.model = DDP(nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10)))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.step = 0

    def log(self, msg):
        print(f"{time.strftime('%H:%M:%S')} [rank {self.rank}] {msg}", flush=True)

    def run(self, max_steps=400):
        self.log("start training")
        while self.step < max_steps:
            x, y = torch.randn(32, 128), torch.randint(0, 10, (32,))
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.step += 1
            if self.step % 50 == 0:
                self.log(f"step {self.step} loss {loss.item():.3f}")
            time.sleep(0.1)
        dist.destroy_process_group()


if __name__ == "__main__":
    Trainer().run()
