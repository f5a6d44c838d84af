"""Two-stage model parallel by hand: rank 0 runs the first half, rank 1 the second."""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn

BATCH, HIDDEN = 32, 64


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(rank)
    data = torch.randn(1000, 20)  # 1000 samples: the last batch has 8
    if rank == 0:
        stage = nn.Sequential(nn.Linear(20, HIDDEN), nn.ReLU())
    else:
        stage = nn.Sequential(nn.Linear(HIDDEN + 20, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))
    with torch.no_grad():
        for i in range(0, len(data), BATCH):
            if rank == 0:
                x = data[i:i + BATCH]
                act = torch.cat([stage(x), x], dim=1)  # skip connection: pass the raw features on
                dist.send(act.contiguous(), dst=1)
            else:
                act = torch.empty(BATCH, HIDDEN)
                dist.recv(act, src=0)
                out = stage(act)
                if i % (10 * BATCH) == 0:
                    print(f"batch {i // BATCH}: mean output {out.mean().item():.4f}", flush=True)
    print(f"rank {rank} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
