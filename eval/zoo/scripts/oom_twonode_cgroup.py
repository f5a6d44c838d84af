import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    node = os.environ["GROUP_RANK"]
    model = DDP(nn.Linear(256, 256))
    opt = torch.optim.Adam(model.parameters())
    replay = []  # replay buffer of past batches, sampled for the auxiliary loss
    for step in range(1, 301):
        batch = torch.randn(4096, 256)
        replay.append(batch)
        aux = replay[torch.randint(len(replay), (1,)).item()]
        loss = model(batch).pow(2).mean() + 0.1 * model(aux[:64]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"node {node} rank {rank} step {step} loss {loss.item():.4f} replay {len(replay)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
