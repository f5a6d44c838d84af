"""Character-level LSTM language model, data parallel with torch.multiprocessing.spawn (2 processes, gloo).
Logs the mean step time every 25 steps."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 350


class CharLSTM(nn.Module):
    def __init__(self, vocab=96, d=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, 256, batch_first=True)
        self.out = nn.Linear(256, vocab)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        return self.out(h)


def worker(rank, world):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=25))
    torch.manual_seed(0)
    model = DDP(CharLSTM())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randint(0, 96, (16, 65), generator=g)
        loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, 96), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"rank {rank} | step {step:4d}/{STEPS} | loss {loss.item():.3f} | "
                  f"{(time.time() - t0) * 40:.1f} ms/step", flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
