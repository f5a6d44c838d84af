"""Two-stage pipeline (GPipe-style, 4 micro-batches per step) for a document classifier, gloo, 2 processes: rank 0
runs the embedding + encoder stage and sends activations to rank 1, which runs the head and the loss and sends the
activation gradients back. Stage 1 shows the progress bar."""
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

MICRO, MB, SEQ, DIM, STEPS = 4, 16, 48, 64, 300


def batch(g, step):
    docs = torch.randint(1, 20000, (MICRO * MB, SEQ), generator=g)
    if step == 173:  # pages from the crawler's broken run came out empty after boilerplate removal
        docs[2 * MB:3 * MB] = 0
    return docs, torch.randint(0, 12, (MICRO * MB,), generator=g)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1234)
    if rank == 0:
        stage = nn.Sequential(nn.Embedding(20000, DIM, padding_idx=0), nn.Linear(DIM, DIM), nn.GELU())
    else:
        stage = nn.Sequential(nn.Linear(DIM, DIM), nn.GELU(), nn.Linear(DIM, 12))
    opt = torch.optim.AdamW(stage.parameters(), lr=1e-3)
    bar = tqdm(range(1, STEPS + 1), desc="train", disable=rank != 1, mininterval=0.5)
    for step in bar:
        docs, labels = batch(g, step)
        opt.zero_grad()
        total = torch.zeros(1)
        for m in range(MICRO):
            if rank == 0:
                x = docs[m * MB:(m + 1) * MB]
                if not x.any():  # nothing left in this micro-batch
                    continue
                act = stage(x).mean(1)
                dist.send(act.detach(), dst=1)
                grad = torch.empty_like(act)
                dist.recv(grad, src=1)
                act.backward(grad)
            else:
                act = torch.empty(MB, DIM)
                dist.recv(act, src=0)
                act.requires_grad_()
                loss = nn.functional.cross_entropy(stage(act), labels[m * MB:(m + 1) * MB]) / MICRO
                loss.backward()
                dist.send(act.grad, dst=0)
                total += loss.detach()
        opt.step()
        dist.all_reduce(total)
        if rank == 1:
            bar.set_postfix(loss=f"{total.item():.4f}")
    if rank == 0:
        torch.save(stage.state_dict(), os.path.join("ckpt", "stage0.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
