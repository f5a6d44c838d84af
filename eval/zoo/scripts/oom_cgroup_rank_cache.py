import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class CachedFeatures:
    """Keeps every computed feature batch in RAM so later epochs skip the extractor."""

    def __init__(self):
        self.cache = {}

    def get(self, key, fn):
        if key not in self.cache:
            self.cache[key] = fn()
        return self.cache[key]


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    time.sleep(2)  # stagger start (shared filesystem)
    feats = CachedFeatures()
    model = DDP(nn.Linear(1024, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(200):
        x = feats.get(step, lambda: torch.randn(4096, 1024))  # 16 MiB per batch
        loss = model(x[:64]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"rank {rank} step {step} cached {len(feats.cache)} batches", flush=True)
        time.sleep(0.05)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
