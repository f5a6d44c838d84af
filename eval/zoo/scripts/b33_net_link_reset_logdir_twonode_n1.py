"""Sequence tagger for log lines (BiLSTM softmax tagger), DDP over gloo, one process per node; tqdm bar on
every rank (each node's operator watches its own terminal), a checkpoint by rank 0 every 200 steps."""
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20000, 96)
        self.lstm = nn.LSTM(96, 96, batch_first=True, bidirectional=True)
        self.out = nn.Linear(192, 17)

    def forward(self, x):
        return self.out(self.lstm(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Tagger())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    bar = tqdm(range(1, 1001), desc=f"node{os.environ['GROUP_RANK']} rank{rank}", mininterval=2.0)
    for step in bar:
        x = torch.randint(0, 20000, (32, 40), generator=g)
        y = x % 17
        loss = F.cross_entropy(model(x).reshape(-1, 17), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
        if step % 200 == 0:
            if rank == 0:
                os.makedirs("ckpt", exist_ok=True)
                torch.save(model.module.state_dict(), f"ckpt/step_{step}.pt")
            tqdm.write(f"[rank{rank}] step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
