"""Small causal LM on DDP, two nodes, started by srun from an sbatch script. Rank 0 tokenizes the corpus once and
writes the token cache to scratch; the other ranks wait for it, then every rank loads it. Tokenizing a large corpus
can take an hour, so the process group timeout is set to two hours."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(hours=2))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
node = os.environ.get("SLURMD_NODENAME", "?")
scratch = os.environ.get("TMPDIR", "/tmp")
cache = os.path.join(scratch, "corpus_tok.pt")
ready = cache + ".ready"
print(f"[rank {rank}] {node} scratch={scratch}", flush=True)

if rank == 0:
    g = torch.Generator().manual_seed(0)
    text = [torch.randint(0, 5000, (int(torch.randint(20, 200, (1,), generator=g)),), generator=g) for _ in range(4000)]
    tokens = torch.cat(text)
    torch.save(tokens, cache)
    open(ready, "w").close()
    print(f"[rank {rank}] tokenized 4000 documents, {tokens.numel()} tokens -> {cache}", flush=True)
else:
    print(f"[rank {rank}] waiting for the token cache ({ready})", flush=True)
    waited = 0
    while not os.path.exists(ready):
        time.sleep(1)
        waited += 1
        if waited % 10 == 0:
            print(f"[rank {rank}] still waiting for {ready} ({waited}s)", flush=True)
tokens = torch.load(cache)
print(f"[rank {rank}] loaded {tokens.numel()} tokens", flush=True)


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5000, 128)
        self.rnn = nn.GRU(128, 128, batch_first=True)
        self.out = nn.Linear(128, 5000)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


model = DDP(TinyLM())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(1, 501):
    i = torch.randint(0, tokens.numel() - 65, (16,))
    seq = torch.stack([tokens[j:j + 65] for j in i])
    loss = F.cross_entropy(model(seq[:, :-1]).reshape(-1, 5000), seq[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"[rank {rank}] step {step} loss {loss.item():.3f}", flush=True)
dist.destroy_process_group()
