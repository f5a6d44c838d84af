"""Image-text retrieval (two small towers, in-batch contrastive loss) on DDP, 3 ranks. From step 40 each rank keeps
the embeddings of past batches in a hard-negative bank in host memory (grown every step, never trimmed: the
'mine from everything seen so far' variant). Only rank 0 prints."""
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
torch.manual_seed(0)


class Towers(nn.Module):
    def __init__(self):
        super().__init__()
        self.img = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 128))
        self.txt = nn.Sequential(nn.Linear(300, 256), nn.ReLU(), nn.Linear(256, 128))

    def forward(self, im, tx):
        return F.normalize(self.img(im), dim=-1), F.normalize(self.txt(tx), dim=-1)


model = DDP(Towers())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
bank = []  # hard-negative bank: raw features of past batches (kept for re-encoding with the current towers)
if rank == 0:
    print(f"retrieval trainer: {world} ranks, batch 256, hard negatives from step 40", flush=True)
t0 = time.time()
for step in range(1, 241):
    im = torch.randn(256, 512, generator=g)
    tx = im[:, :300] + 0.3 * torch.randn(256, 300, generator=g)
    a, b = model(im, tx)
    logits = a @ b.t() / 0.05
    labels = torch.arange(256)
    loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2
    if step >= 40:
        bank.append(torch.cat([im, tx], 1).repeat(4, 1))  # four augmented views per sample
        neg = torch.stack(bank[-8:]).view(-1, 812)[::16]
        with torch.no_grad():
            nb = F.normalize(model.module.txt(neg[:, 512:]), dim=-1)
        loss = loss + 0.1 * torch.logsumexp(a @ nb.t() / 0.05, 1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 0 and step % 10 == 0:
        mb = sum(t.numel() * 4 for t in bank) / 2 ** 20
        print(f"step {step:4d} | loss {loss.item():.4f} | bank {mb:6.1f} MB | {(time.time() - t0) * 100:.0f} ms/step",
              flush=True)
        t0 = time.time()
if rank == 0:
    print("done", flush=True)
dist.destroy_process_group()
