"""Intent classifier (token + learned position embeddings, mean-pooled, MLP head) with DDP on 2 ranks, torchrun
--max-restarts 3 (c10d rendezvous, --log-dir, --tee 3). Each rank reads its pre-tokenized shard data/tok-<R>.jsonl (one
list of token ids per line, labels beside them), batches of 16 in file order padded to the batch's longest example;
the model has 128 positions (the tokenizer pipeline truncates to 128). Rank 0 checkpoints every 20 steps; every
(re)started worker resumes from ckpt/last.pt."""
import datetime
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

MAX_POS, BATCH, STEPS = 128, 16, 80


class IntentModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(8000, 96, padding_idx=0)
        self.pos = nn.Embedding(MAX_POS, 96)
        self.head = nn.Sequential(nn.Linear(96, 96), nn.GELU(), nn.Linear(96, 20))

    def forward(self, ids):
        h = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))[None]
        mask = (ids != 0).float()[..., None]
        return self.head((h * mask).sum(1) / mask.sum(1))


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
rows = [json.loads(line) for line in open(f"data/tok-{rank}.jsonl")]
net = IntentModel()
model = DDP(net)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
start = 0
if os.path.exists("ckpt/last.pt"):
    state = torch.load("ckpt/last.pt")
    net.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    start = state["step"]
print(f"rank {rank}: {len(rows)} examples, restart {os.environ.get('TORCHELASTIC_RESTART_COUNT')}, "
      f"from step {start + 1}", flush=True)
for step in range(start + 1, STEPS + 1):
    batch = rows[(step - 1) * BATCH:step * BATCH]
    width = max(len(r["ids"]) for r in batch)
    ids = torch.tensor([r["ids"] + [0] * (width - len(r["ids"])) for r in batch])
    y = torch.tensor([r["label"] for r in batch])
    loss = F.cross_entropy(model(ids), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"rank {rank} step {step}/{STEPS} loss {loss.item():.4f}", flush=True)
    if step % 20 == 0 and rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "step": step}, "ckpt/tmp.pt")
        os.replace("ckpt/tmp.pt", "ckpt/last.pt")
        print(f"rank 0: checkpoint step {step}", flush=True)
print(f"rank {rank}: finished", flush=True)
dist.destroy_process_group()
