"""Char-level GRU language model, 3 epochs, DDP over gloo; every rank prints every batch."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn


class CharGRU(nn.Module):
    def __init__(self, vocab=96, hid=192):
        super().__init__()
        self.emb = nn.Embedding(vocab, 64)
        self.rnn = nn.GRU(64, hid, batch_first=True)
        self.out = nn.Linear(hid, vocab)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(CharGRU())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    batches = 180
    for epoch in range(1, 4):
        for b in range(1, batches + 1):
            t0 = time.time()
            x = torch.randint(0, 96, (16, 33))
            out = model(x[:, :-1])
            loss = nn.functional.cross_entropy(out.reshape(-1, 96), x[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"[rank{rank}] Epoch {epoch} Batch {b}/{batches} loss={loss.item():.3f} {1 / (time.time() - t0):.1f} it/s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
