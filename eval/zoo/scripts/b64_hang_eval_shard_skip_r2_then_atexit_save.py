"""Defect detector head (MLP over patch embeddings) on DDP, 3 ranks. Every 30 steps each rank scores its part of
the validation files and the ranks all-reduce the counts. A checkpoint-on-exit hook (atexit) saves the last
weights whenever the process ends, so a crashed run still leaves something to resume from."""
import atexit
import datetime
import glob

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
eval_group = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=25))  # metrics off DDP's group
model = DDP(nn.Sequential(nn.Linear(96, 192), nn.ReLU(), nn.Linear(192, 2)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
val_files = sorted(glob.glob("val/*.pt"))
my_val = val_files[rank::world]
state = {"step": 0}


@atexit.register
def save_on_exit():
    path = f"ckpt/exit-rank{rank}-step{state['step']}.pt"
    torch.save(model.module.state_dict(), path)
    print(f"[rank{rank}] exit checkpoint written to {path}", flush=True)


def evaluate():
    correct = torch.zeros(2)
    for f in my_val:
        d = torch.load(f)
        with torch.no_grad():
            pred = model.module(d["x"]).argmax(1)
        correct += torch.tensor([(pred == d["y"]).sum().item(), len(d["y"])], dtype=torch.float)
    dist.all_reduce(correct, group=eval_group)
    return (correct[0] / correct[1]).item()


g = torch.Generator().manual_seed(rank)
for step in range(1, 301):
    x = torch.randn(128, 96, generator=g)
    y = (x[:, :3].sum(1) > 0).long()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    state["step"] = step
    if step % 10 == 0:
        print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    if step % 30 == 0:
        if not my_val:
            print(f"[rank{rank}] step {step}: no validation files for this rank, skipping eval", flush=True)
            continue
        acc = evaluate()
        print(f"[rank{rank}] step {step} val_acc {acc:.4f}", flush=True)
dist.destroy_process_group()
