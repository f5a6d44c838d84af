"""Hand-written two-stage pipeline (rank 0: embedding + encoder, rank 1: head + loss); validation every 150 steps."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn

ACT_TAG, GRAD_TAG, VAL_TAG = 0, 1, 2
B, T, D = 16, 32, 128


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    torch.manual_seed(rank)
    if rank == 0:
        stage = nn.Sequential(nn.Embedding(5000, D), nn.Linear(D, D), nn.GELU(), nn.Linear(D, D))
    else:
        stage = nn.Sequential(nn.GELU(), nn.Linear(D, 5000))
    opt = torch.optim.AdamW(stage.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(0)
    t = time.time()
    for step in range(1, 601):
        tokens = torch.randint(0, 5000, (B, T), generator=g)
        opt.zero_grad()
        if rank == 0:
            h = stage(tokens)
            dist.send(h.detach(), 1, tag=ACT_TAG)
            gh = torch.empty_like(h)
            dist.recv(gh, 1, tag=GRAD_TAG)
            h.backward(gh)
        else:
            h = torch.empty(B, T, D)
            dist.recv(h, 0, tag=ACT_TAG)
            h.requires_grad_()
            loss = nn.functional.cross_entropy(stage(h).reshape(-1, 5000), tokens.roll(-1, 1).reshape(-1))
            loss.backward()
            dist.send(h.grad, 0, tag=GRAD_TAG)
        opt.step()
        if rank == 1 and step % 25 == 0:
            print(f"step {step}/600 loss {loss.item():.4f} ({(time.time() - t) * 40:.0f} ms/step)")
            t = time.time()
        if step % 150 == 0:  # validation pass
            with torch.no_grad():
                vt = torch.randint(0, 5000, (B, T), generator=g)
                if rank == 0:
                    dist.send(stage(vt), 1, tag=VAL_TAG)
                else:
                    vh = torch.empty(B, T, D)
                    dist.recv(vh, 0, tag=ACT_TAG)
                    vloss = nn.functional.cross_entropy(stage(vh).reshape(-1, 5000), vt.roll(-1, 1).reshape(-1))
                    print(f"step {step}: val loss {vloss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
