"""Support-ticket router (EmbeddingBag over hashed word ids + linear head, 24 queues) on DDP, 3 ranks, optimizer
settings from configs/router.yaml. Each rank reads its shard of tokenised tickets; the loop asserts the loss is
finite before stepping."""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP

cfg = yaml.safe_load(open("configs/router.yaml"))
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)


class Router(nn.Module):
    def __init__(self, vocab, dim, queues):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Linear(dim, queues)

    def forward(self, ids, offsets):
        return self.head(self.emb(ids, offsets))


shard = torch.load(f"data/tickets-{rank}.pt")
tickets, labels = shard["tickets"], shard["queue"]
model = DDP(Router(cfg["model"]["vocab"], cfg["model"]["dim"], cfg["model"]["queues"]))
o = cfg["optim"]
opt = torch.optim.Adam(model.parameters(), lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"])
if rank == 0:
    print(f"optimizer: {opt}", flush=True)
print(f"rank {rank}: {len(tickets)} tickets", flush=True)
bs = cfg["train"]["batch_size"]
for step in range(len(tickets) // bs):
    batch = tickets[step * bs:(step + 1) * bs]
    ids = torch.cat(batch)
    offsets = torch.tensor([0] + [len(t) for t in batch[:-1]]).cumsum(0)
    loss = nn.functional.cross_entropy(model(ids, offsets), labels[step * bs:(step + 1) * bs])
    assert torch.isfinite(loss), f"rank {rank}: non-finite loss {loss.item()} at step {step}"
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
