"""Next-token model on a small code corpus (2-layer transformer), DDP over gloo, 2 ranks; every rank logs its own
step times."""
import logging
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TinyLM(nn.Module):
    def __init__(self, vocab=2048, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 4, 128, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        return self.out(self.enc(self.emb(x)))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(message)s")
    log = logging.getLogger()
    torch.set_num_threads(1)
    model = DDP(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    n = 500
    t_last = time.time()
    fwd = 0.0
    for step in range(1, n + 1):
        x = torch.randint(0, 2048, (8, 32), generator=g)
        t_f = time.time()
        logits = model(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 2048), x[:, 1:].reshape(-1))
        fwd += time.time() - t_f
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            now = time.time()
            log.info("step %d/%d loss %.4f step_time %.1f ms fwd %.1f ms", step, n, loss.item(),
                     (now - t_last) * 1000 / 20, fwd * 1000 / 20)
            t_last, fwd = now, 0.0
    dist.barrier()
    log.info("training complete")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
