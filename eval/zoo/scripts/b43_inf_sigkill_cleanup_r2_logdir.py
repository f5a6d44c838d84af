"""Support-ticket intent classifier (embedding bag + MLP) with DDP on 3 processes, launched with torchrun. Each rank
draws its own batches of hashed token ids; rank-prefixed progress every 20 steps."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)

VOCAB, INTENTS, STEPS = 50000, 40, 400


class IntentNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 64, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, INTENTS))

    def forward(self, tokens, offsets):
        return self.mlp(self.emb(tokens, offsets))


model = DDP(IntentNet())
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
g = torch.Generator().manual_seed(100 + rank)
print(f"[rank{rank}] world {world}, {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M params", flush=True)
t0 = time.time()
for step in range(1, STEPS + 1):
    lengths = torch.randint(5, 40, (64,), generator=g)
    tokens = torch.randint(0, VOCAB, (int(lengths.sum()),), generator=g)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    labels = torch.randint(0, INTENTS, (64,), generator=g)
    loss = F.cross_entropy(model(tokens, offsets), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"[rank{rank}] step {step}/{STEPS} loss {loss.item():.4f} {(time.time() - t0) * 50:.1f} ms/step",
              flush=True)
        t0 = time.time()
if rank == 0:
    torch.save(model.module.state_dict(), "intent_model.pt")
print(f"[rank{rank}] finished", flush=True)
dist.destroy_process_group()
