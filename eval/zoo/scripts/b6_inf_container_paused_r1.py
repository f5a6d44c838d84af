"""Two-layer LSTM language model, DDP over gloo, progress from every rank."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class LSTMLM(nn.Module):
    def __init__(self, vocab=3000, d=96):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, d, num_layers=2, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        return self.out(self.lstm(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    model = DDP(LSTMLM())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for it in range(1, 1501):
        x = torch.randint(0, 3000, (16, 33), generator=g)
        loss = nn.functional.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 0:
            print(f"rank {rank} | it {it} | loss {loss.item():.3f} | {(time.time() - t0) * 100:.0f} ms/it")
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
