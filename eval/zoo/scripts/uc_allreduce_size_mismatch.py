import datetime
import os

import torch
import torch.distributed as dist


def grad_bucket(params):
    return torch.cat([p.grad.flatten() for p in params if p.grad is not None])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU(), torch.nn.Linear(10, 1))
    freeze_first = rank == 0 and os.environ.get("FREEZE_EMBED", "1") == "1"
    if freeze_first:  # rank 0 restores the frozen embedding from the finetune recipe
        model[0].requires_grad_(False)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)
    for step in range(30):
        loss = model(torch.randn(16, 10)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        flat = grad_bucket(model.parameters())
        dist.all_reduce(flat)  # manual data parallel: average the gradients
        flat /= world
        offset = 0
        for p in model.parameters():
            if p.grad is not None:
                n = p.grad.numel()
                p.grad.copy_(flat[offset:offset + n].view_as(p.grad))
                offset += n
        opt.step()
        if rank == 0 and step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
