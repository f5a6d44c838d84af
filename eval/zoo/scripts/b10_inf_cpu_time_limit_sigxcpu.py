"""Character-level GRU on a text corpus; DDP over gloo, one process per core slot of the batch job."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [rank%(rank)s] %(message)s")


class CharRNN(nn.Module):
    def __init__(self, v=96, h=192):
        super().__init__()
        self.emb, self.gru, self.out = nn.Embedding(v, 64), nn.GRU(64, h, num_layers=2, batch_first=True), nn.Linear(h, v)

    def forward(self, x):
        return self.out(self.gru(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    log = logging.LoggerAdapter(logging.getLogger("charrnn"), {"rank": rank})
    torch.manual_seed(0)
    model = DDP(CharRNN())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(rank)
    text = torch.randint(0, 96, (300_000,), generator=g)
    epochs, steps = 20, 200
    log.info("training %d epochs x %d steps, batch 32 x 64 chars", epochs, steps)
    for epoch in range(epochs):
        t0 = time.time()
        for step in range(1, steps + 1):
            ix = torch.randint(0, len(text) - 65, (32,), generator=g)
            x = torch.stack([text[i:i + 64] for i in ix])
            y = torch.stack([text[i + 1:i + 65] for i in ix])
            loss = F.cross_entropy(model(x).reshape(-1, 96), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if step % 50 == 0:
                log.info("epoch %d step %d/%d loss %.4f", epoch, step, steps, loss.item())
        log.info("epoch %d done in %.1fs", epoch, time.time() - t0)
        if rank == 0:
            torch.save({"model": model.module.state_dict(), "epoch": epoch}, "charrnn.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
