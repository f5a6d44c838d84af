import datetime
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
rank = dist.get_rank()
local_rank = int(os.environ["LOCAL_RANK"])
PREP_DONE = "cache/.prepared"

# one process prepares the cache, the others wait for it
if local_rank == 0:
    os.makedirs("cache", exist_ok=True)
    torch.save(torch.randn(1000, 20), "cache/feats.pt")
    dist.barrier()
    open(PREP_DONE, "w").close()
else:
    while not os.path.exists(PREP_DONE):
        time.sleep(1)
    dist.barrier()

feats = torch.load("cache/feats.pt")
model = DDP(torch.nn.Linear(20, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(0, 1000, 50):
    loss = model(feats[i:i + 50]).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"rank {rank} finished")
dist.destroy_process_group()
