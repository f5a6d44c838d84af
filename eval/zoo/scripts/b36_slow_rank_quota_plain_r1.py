"""Character-level language model (1-D conv stack) on a text corpus, DDP over gloo; each rank prints a timing line
every 25 steps with its own forward/backward time and its wait in the gradient all-reduce. Plain prints."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class CharCNN(nn.Module):
    def __init__(self, vocab=256, d=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.convs = nn.ModuleList([nn.Conv1d(d, d, 3, padding=2, dilation=1) for _ in range(4)])
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        h = self.emb(x).transpose(1, 2)
        for c in self.convs:
            h = h + F.gelu(c(h)[..., :h.shape[-1]])
        return self.out(h.transpose(1, 2))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = CharCNN()
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(rank)
    steps = 500
    fb = ar = 0.0
    for step in range(1, steps + 1):
        t0 = time.time()
        x = torch.randint(0, 256, (16, 65), generator=g)
        loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, 256), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        t1 = time.time()
        flat = torch.cat([p.grad.flatten() for p in model.parameters()])
        dist.all_reduce(flat)
        flat /= world
        off = 0
        for p in model.parameters():
            p.grad.copy_(flat[off:off + p.numel()].view_as(p))
            off += p.numel()
        opt.step()
        t2 = time.time()
        fb += t1 - t0
        ar += t2 - t1
        if step % 25 == 0:
            print(f"rank {rank} step {step}/{steps} loss {loss.item():.4f} fwd_bwd {fb / 25 * 1000:.1f} ms "
                  f"allreduce {ar / 25 * 1000:.1f} ms step {(fb + ar) / 25 * 1000:.1f} ms")
            fb = ar = 0.0
    dist.barrier()
    print(f"rank {rank} done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
