import datetime

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    grad_group = dist.new_group(list(range(world)), timeout=datetime.timedelta(seconds=15))
    stats_group = dist.new_group(list(range(world)), timeout=datetime.timedelta(seconds=15))
    w = torch.zeros(1000, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    for step in range(100):
        loss = (w - torch.randn(1000)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        stats = torch.tensor([loss.item(), 1.0])
        if rank % 2 == 0:
            dist.all_reduce(w.grad, group=grad_group)
            dist.all_reduce(stats, group=stats_group)
        else:  # odd ranks log first, then sync grads
            dist.all_reduce(stats, group=stats_group)
            dist.all_reduce(w.grad, group=grad_group)
        w.grad /= world
        opt.step()
        if rank == 0 and step % 10 == 0:
            print(f"step {step} mean loss {stats[0].item() / stats[1].item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
