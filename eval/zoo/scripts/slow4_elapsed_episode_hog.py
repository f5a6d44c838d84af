"""Word2vec-style skip-gram on a synthetic token stream, DDP (gloo). Prints cumulative elapsed time."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn


class SkipGram(nn.Module):
    def __init__(self, vocab=20000, dim=128):
        super().__init__()
        self.inp = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, centre):
        return self.out(self.inp(centre))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(SkipGram())
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    start = time.time()
    for it in range(1, 701):
        centre = torch.randint(0, 20000, (64,))
        ctx = (centre + torch.randint(-3, 4, (64,))).clamp(0, 19999)
        loss = nn.functional.cross_entropy(model(centre), ctx)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 0 and rank == 0:
            print(f"it: {it} loss: {loss.item():.4f} elapsed: {time.time() - start:.1f}s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
