"""Image classifier split by hand into 3 pipeline stages, one per process (conv stem | conv body | pooling head),
with point-to-point send/recv of activations forward and of their gradients backward, 4 microbatches per step
(GPipe-style: all forwards, then all backwards)."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

MICRO, N_MICRO = 16, 4
SHAPES = [(MICRO, 32, 16, 16), (MICRO, 64, 8, 8)]  # activation leaving stage 0, stage 1


def build(rank):
    if rank == 0:
        return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
    if rank == 1:
        return nn.Sequential(nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                             nn.MaxPool2d(2))
    return nn.Sequential(nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(128, 10))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(rank)
    stage = build(rank)
    opt = torch.optim.SGD(stage.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(0)  # every stage draws the same batch (labels are used by the last)
    t0 = time.time()
    for step in range(1, 401):
        images = torch.randn(N_MICRO, MICRO, 3, 32, 32, generator=g)
        labels = torch.randint(0, 10, (N_MICRO, MICRO), generator=g)
        ins, outs, losses = [], [], []
        for m in range(N_MICRO):  # forward of every microbatch
            if rank == 0:
                x = images[m]
            else:
                x = torch.empty(SHAPES[rank - 1])
                dist.recv(x, src=rank - 1)
                x.requires_grad_()
            y = stage(x)
            if rank < world - 1:
                dist.send(y.detach(), dst=rank + 1)
            else:
                y = F.cross_entropy(y, labels[m]) / N_MICRO
                losses.append(y.item())
            ins.append(x)
            outs.append(y)
        for m in range(N_MICRO):  # backward of every microbatch
            if rank == world - 1:
                outs[m].backward()
            else:
                grad = torch.empty(SHAPES[rank])
                dist.recv(grad, src=rank + 1)
                outs[m].backward(grad)
            if rank > 0:
                dist.send(ins[m].grad, dst=rank - 1)
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            msg = f"loss {sum(losses):.4f} " if rank == world - 1 else ""
            print(f"[stage {rank}] step {step} {msg}{(time.time() - t0) / step * 1000:.0f} ms/step", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
