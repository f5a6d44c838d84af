"""Review-sentiment classifier (embedding + conv encoder) on DDP, 3 ranks. To cut padding, the dataset is sorted by
length and each rank takes a contiguous slice of it (rank 0 the longest reviews). Reviews longer than 64 tokens also
go through a long-range (dilated conv) block; short batches skip it to save time."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)

VOCAB, PAD = 5000, 0


class ReviewNet(nn.Module):
    def __init__(self, dim=96, short_len=64):
        super().__init__()
        self.short_len = short_len
        self.emb = nn.Embedding(VOCAB, dim, padding_idx=PAD)
        self.local = nn.Conv1d(dim, dim, 3, padding=1)
        self.long_range = nn.Conv1d(dim, dim, 3, padding=4, dilation=4)  # only needed for long reviews
        self.head = nn.Linear(dim, 2)

    def forward(self, tokens):
        h = self.emb(tokens).transpose(1, 2)
        h = F.gelu(self.local(h))
        if tokens.size(1) > self.short_len:
            h = h + F.gelu(self.long_range(h))
        return self.head(h.amax(dim=2))


# the corpus: 3,000 reviews of 12-180 tokens, sorted by length (longest first)
g = torch.Generator().manual_seed(52)
lengths = torch.sort(torch.randint(12, 180, (3000,), generator=g), descending=True).values
per_rank = len(lengths) // world
mine = lengths[rank * per_rank:(rank + 1) * per_rank]
print(f"[rank {rank}] {len(mine)} reviews, lengths {int(mine.min())}-{int(mine.max())}", flush=True)

model = DDP(ReviewNet())
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
BS = 32
for step in range(len(mine) // BS):
    L = int(mine[step * BS:(step + 1) * BS].max())
    tokens = torch.randint(1, VOCAB, (BS, L), generator=g)
    labels = torch.randint(0, 2, (BS,), generator=g)
    loss = F.cross_entropy(model(tokens), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"[rank {rank}] step {step} len {L} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
