import datetime
import json
import threading

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class BackgroundLoader:
    """Reads the next shard in a thread while the current one trains."""

    def __init__(self, paths):
        self.paths = paths
        self.ready = threading.Event()
        self.data = None

    def start(self, i):
        self.ready.clear()
        threading.Thread(target=self._load, args=(self.paths[i],), daemon=True).start()

    def _load(self, path):
        with open(path) as f:
            meta = json.load(f)
        n = meta["num_samples"] // meta["batch"]
        self.data = [torch.randn(meta["batch"], 16) for _ in range(n)]
        self.ready.set()

    def get(self):
        self.ready.wait()
        return self.data


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    loader = BackgroundLoader([f"shards/meta_{rank}_{k}.json" for k in range(3)])
    model = DDP(torch.nn.Linear(16, 16))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader.start(0)
    for k in range(3):
        batches = loader.get()
        if k + 1 < 3:
            loader.start(k + 1)
        for x in batches:
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"rank {rank}: shard {k} done ({len(batches)} batches)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
