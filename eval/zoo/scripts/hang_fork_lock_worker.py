import datetime
import threading
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

LOG_LOCK = threading.Lock()


def log(msg):
    with LOG_LOCK:
        print(msg, flush=True)


class MetricsWriter(threading.Thread):
    """Flushes metrics to disk every few seconds (rank 0 only)."""

    def __init__(self):
        super().__init__(daemon=True)

    def run(self):
        while True:
            with LOG_LOCK:
                with open("metrics.log", "a") as f:
                    f.write(f"{time.time():.0f} alive\n")
                time.sleep(0.5)  # slow disk
            time.sleep(0.01)


class Samples(Dataset):
    def __len__(self):
        return 640

    def __getitem__(self, i):
        if i % 100 == 0:
            log(f"  worker loading sample {i}")
        return torch.randn(16)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    if rank == 0:
        MetricsWriter().start()
        time.sleep(0.2)
    model = DDP(torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        dl = DataLoader(Samples(), batch_size=32, num_workers=2, multiprocessing_context="fork")
        for step, x in enumerate(dl):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        log(f"rank {rank} epoch {epoch} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
