"""Intent classifier (bag of words -> MLP) on DDP, launched with srun (one task per rank, two nodes). Each rank reads
its own shard of the annotated utterances (data/intents-<rank>.jsonl)."""
import datetime
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

INTENTS = {"play_music": 0, "set_alarm": 1, "weather": 2, "book_table": 3, "navigate": 4, "call_contact": 5}
VOCAB = 2048

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
host = os.environ.get("SLURMD_NODENAME", "?")
print(f"[rank {rank}] on {host}, world {world}", flush=True)


def featurize(text):
    v = torch.zeros(VOCAB)
    for w in text.lower().split():
        v[hash(w) % VOCAB] += 1.0
    return v


rows = [json.loads(l) for l in open(f"data/intents-{rank}.jsonl")]
print(f"[rank {rank}] {len(rows)} utterances", flush=True)
model = DDP(nn.Sequential(nn.Linear(VOCAB, 256), nn.ReLU(), nn.Linear(256, len(INTENTS))))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
bs = 32
for step in range(1, 201):
    batch = rows[(step * bs) % len(rows):(step * bs) % len(rows) + bs] or rows[:bs]
    x = torch.stack([featurize(r["text"]) for r in batch])
    y = torch.tensor([INTENTS[r["intent"]] for r in batch])
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
