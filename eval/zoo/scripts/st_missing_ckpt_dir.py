import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--save-dir", default="checkpoints")
parser.add_argument("--run-name", default="run1")
parser.add_argument("--save-every", type=int, default=25)
args = parser.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(torch.nn.Sequential(torch.nn.Linear(12, 12), torch.nn.Tanh(), torch.nn.Linear(12, 3)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)

for step in range(1, 101):
    x = torch.randn(32, 12)
    y = x[:, :3].argmax(1)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % args.save_every == 0 and rank == 0:
        torch.save(model.module.state_dict(), f"{args.save_dir}/{args.run_name}/step{step}.pt")
        print(f"step {step}: checkpoint written")
dist.destroy_process_group()
