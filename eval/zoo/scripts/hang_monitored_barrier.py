import datetime
import queue
import threading

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def prefetch(q, n, rank):
    # rank 2's reader has only half of its files
    for i in range(n if rank != 2 else 3 * n // 4):
        q.put(torch.randn(16, 8))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    q = queue.Queue(maxsize=8)
    threading.Thread(target=prefetch, args=(q, 40, rank), daemon=True).start()
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        batches = [q.get() for _ in range(20)]
        print(f"rank {rank}: epoch {epoch} data ready", flush=True)
        # make sure every rank has its epoch's data before training
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=10), wait_all_ranks=True)
        for x in batches:
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"rank {rank}: epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
