"""Named-entity tagger (embeddings + BiLSTM + linear) on DDP across two nodes, 2 processes per node. Rank 0 writes a
checkpoint every 100 steps."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
torch.manual_seed(0)
torch.set_num_threads(1)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20000, 64)
        self.lstm = nn.LSTM(64, 64, batch_first=True, bidirectional=True)
        self.out = nn.Linear(128, 9)

    def forward(self, x):
        return self.out(self.lstm(self.emb(x))[0])


model = DDP(Tagger())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
os.makedirs("checkpoints", exist_ok=True)
print(f"[node{node}] rank {rank}/{world} training", flush=True)
for step in range(1, 801):
    x = torch.randint(0, 20000, (32, 40), generator=g)
    tags = x % 9
    loss = F.cross_entropy(model(x).reshape(-1, 9), tags.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"[node{node}] rank {rank} step {step}/800 loss {loss.item():.4f}", flush=True)
    if step % 100 == 0 and rank == 0:
        torch.save({"step": step, "model": model.module.state_dict()}, f"checkpoints/ner_step{step}.pt")
        print(f"[node{node}] rank 0 checkpoint checkpoints/ner_step{step}.pt", flush=True)
dist.destroy_process_group()
