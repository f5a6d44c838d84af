"""Intent classification fine-tune of the team's small encoder (pretrained with an MLM head and a pooler; the
checkpoint layout keeps both so that every task loads the same weights). Tasks pick which outputs they use: 'intent'
uses the token states' mean, 'pair' the pooler. DDP options come from the command line."""
import argparse
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--task", choices=["intent", "pair"], default="intent")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--ddp-find-unused-parameters", type=lambda s: s.lower() in ("1", "true", "yes"), default=True)
args = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)


class Encoder(nn.Module):
    def __init__(self, vocab=4000, dim=128, layers=2, n_intents=12):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, 256, batch_first=True, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pooler = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())  # CLS pooler ('pair' tasks)
        self.mlm_head = nn.Linear(dim, vocab)  # kept from pretraining
        self.intent_head = nn.Linear(dim, n_intents)
        self.pair_head = nn.Linear(dim, 2)

    def forward(self, tokens, task):
        h = self.encoder(self.emb(tokens))
        if task == "intent":
            return self.intent_head(h.mean(1))
        return self.pair_head(self.pooler(h[:, 0]))


model = Encoder()
if rank == 0:
    print(f"task={args.task} find_unused_parameters={args.ddp_find_unused_parameters} world={world}", flush=True)
model = DDP(model, find_unused_parameters=args.ddp_find_unused_parameters)
opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
g = torch.Generator().manual_seed(rank)
for epoch in range(args.epochs):
    for it in range(40):
        tokens = torch.randint(0, 4000, (args.batch_size, 24), generator=g)
        y = torch.randint(0, 12, (args.batch_size,), generator=g)
        loss = F.cross_entropy(model(tokens, args.task), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} epoch {epoch} it {it} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
