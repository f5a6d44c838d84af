"""Character-level CNN text classifier, DDP over gloo (torchrun, 3 processes)."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

EPOCHS = 4
STEPS = 150


class CharCNN(nn.Module):
    def __init__(self, n_chars=96, n_classes=5):
        super().__init__()
        self.emb = nn.Embedding(n_chars, 32)
        self.conv = nn.Sequential(nn.Conv1d(32, 32, 7, padding=3), nn.ReLU(), nn.MaxPool1d(3),
                                  nn.Conv1d(32, 64, 5, padding=2), nn.ReLU(), nn.AdaptiveMaxPool1d(1))
        self.fc = nn.Linear(64, n_classes)

    def forward(self, x):
        return self.fc(self.conv(self.emb(x).transpose(1, 2)).squeeze(-1))


def run():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(CharCNN())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(1, EPOCHS + 1):
        t = time.time()
        for step in range(1, STEPS + 1):
            x = torch.randint(0, 96, (16, 96), generator=g)
            y = x[:, 0] % 5
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and step % 10 == 0:
                print(f"Epoch [{epoch}/{EPOCHS}], Step [{step}/{STEPS}], Loss: {loss.item():.4f}, "
                      f"Time: {(time.time() - t) / 10:.3f}s", flush=True)
                t = time.time()
        if rank == 0:
            print(f"Epoch [{epoch}/{EPOCHS}] finished", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    run()
