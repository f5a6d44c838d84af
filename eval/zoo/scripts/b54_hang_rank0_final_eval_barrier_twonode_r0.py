"""Query-intent tagger (embedding + GRU) on DDP, two nodes x 2 processes (torchrun static rendezvous). After the
last epoch rank 0 alone runs the final evaluation on the full held-out set (greedy decoding, one query at a time, as
the serving path does) and writes the report; the other ranks wait for it at a barrier before the job ends. The
process-group timeout is 20 s (the team's setting to make hung collectives fail fast). On a collective error each
rank writes its Flight Recorder trace (TORCH_FR_BUFFER_SIZE is set)."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
torch.set_num_threads(1)
torch.manual_seed(0)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(3000, 64)
        self.rnn = nn.GRU(64, 128, batch_first=True)
        self.out = nn.Linear(128, 17)

    def forward(self, ids):
        return self.out(self.rnn(self.emb(ids))[0])


model = DDP(Tagger())
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
g = torch.Generator().manual_seed(rank)


def fr_dump():
    os.makedirs("fr", exist_ok=True)
    with open(f"fr/node{node}_rank{rank}.fr", "wb") as f:
        f.write(torch._C._distributed_c10d._dump_fr_trace())
    print(f"node{node} rank{rank}: flight recorder trace -> fr/node{node}_rank{rank}.fr", flush=True)


def final_eval(n=200_000):
    m = model.module.eval()
    eg = torch.Generator().manual_seed(999)
    correct = total = 0
    with torch.no_grad():
        for i in range(n):
            ids = torch.randint(0, 3000, (1, 16), generator=eg)
            tags = (ids % 17)
            pred = m(ids).argmax(-1)
            correct += int((pred == tags).sum())
            total += tags.numel()
            if (i + 1) % 25_000 == 0:
                print(f"node{node} rank{rank}: final eval {i + 1}/{n} queries", flush=True)
    return correct / total


try:
    for step in range(1, 121):
        ids = torch.randint(0, 3000, (32, 16), generator=g)
        loss = F.cross_entropy(model(ids).reshape(-1, 17), (ids % 17).reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"node{node} rank{rank}: step {step}/120 loss {loss.item():.4f}", flush=True)
    print(f"{time.strftime('%H:%M:%S')} node{node} rank{rank}: training done", flush=True)
    if rank == 0:
        print(f"{time.strftime('%H:%M:%S')} node{node} rank0: running final evaluation on the held-out set", flush=True)
        acc = final_eval()
        json.dump({"token_acc": acc}, open("final_eval.json", "w"))
        print(f"node{node} rank0: final eval token accuracy {acc:.4f}", flush=True)
    dist.barrier()
except Exception:
    fr_dump()
    raise
print(f"node{node} rank{rank}: exit", flush=True)
dist.destroy_process_group()
