"""Masked-token pre-training of a small encoder with FSDP2 (fully_shard per layer), gloo on CPU for the dev box.

Rank 0 also keeps the predicted distribution at the [CLS] position of every batch, to plot calibration drift on
the dashboard at the end of the epoch.
"""
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from rich.logging import RichHandler
from torch.distributed.fsdp import fully_shard

VOCAB, SEQ, D = 2000, 128, 128

logging.basicConfig(level="INFO", format="%(message)s", datefmt="[%X]",
                    handlers=[RichHandler(show_path=False, markup=False, rich_tracebacks=False)])
log = logging.getLogger("mlm")


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList(
            [nn.TransformerEncoderLayer(D, 4, 256, dropout=0.1, batch_first=True) for _ in range(2)])
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids):
        h = self.emb(ids)
        for layer in self.layers:
            h = layer(h)
        return h, self.head(h)


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = Encoder()
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    n_params = sum(p.numel() for p in model.parameters())
    if rank == 0:
        log.info(f"world={world} params={n_params / 1e6:.2f}M (FSDP2, sharded per layer)")
    cls_history = []  # [CLS]-position logits for the calibration-drift plot (rank 0)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 601):
        ids = torch.randint(5, VOCAB, (8, SEQ), generator=g)
        labels = ids.clone()
        mask = torch.rand(ids.shape, generator=g) < 0.15
        ids = ids.masked_fill(mask, 4)
        labels[~mask] = -100
        hidden, logits = model(ids)
        loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            cls_history.append(logits[:, 0].detach().cpu())
        if step % 5 == 0 and rank == 0:
            log.info(f"step {step:>4}/600  loss {loss.item():.4f}  {(time.time() - t0) / 5:.3f}s/it  "
                     f"drift samples {len(cls_history) * 8}")
            t0 = time.time()
    if rank == 0:
        drift = torch.cat(cls_history).std(0).mean()
        log.info(f"epoch done, CLS calibration drift {drift:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
