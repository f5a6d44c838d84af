# simple DDP job (gloo), one process per worker
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])
world_size = int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", rank=local_rank, world_size=world_size)

model = DDP(torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(100):
    x = torch.randn(8, 16)
    loss = torch.nn.functional.cross_entropy(model(x), (x[:, 0] > 0).long())
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"[{local_rank}] final loss {loss.item():.3f}")
