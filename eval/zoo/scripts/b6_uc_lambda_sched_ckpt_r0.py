"""Language-model fine-tuning with warm-up; checkpoint every epoch (DDP, gloo)."""
import datetime
import logging
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("finetune")


class TinyLM(nn.Module):
    def __init__(self, vocab=2000, d=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    tokens = torch.randint(0, 2000, (1536, 33), generator=torch.Generator().manual_seed(0))
    ds = TensorDataset(tokens[:, :-1], tokens[:, 1:])
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=32, sampler=sampler)
    model = DDP(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    total = 3 * len(loader)
    warmup = 20
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warmup if s < warmup else 0.5 * (1 + math.cos(math.pi * (s - warmup) / (total - warmup))))
    step = 0
    os.makedirs("checkpoints", exist_ok=True)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if step % 4 == 0 and rank == 0:
                log.info("epoch %d step %d/%d loss %.4f lr %.2e", epoch, step, total, loss.item(), sched.get_last_lr()[0])
        if rank == 0:
            path = f"checkpoints/epoch_{epoch}.pt"
            torch.save({"epoch": epoch, "step": step, "model": model.module.state_dict(),
                        "optimizer": opt.state_dict(), "scheduler": sched}, path)
            log.info("saved %s", path)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
