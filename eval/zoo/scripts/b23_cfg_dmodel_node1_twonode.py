"""Streaming keyword-spotting encoder (log-mel frames -> transformer -> 35 keywords), DDP over gloo, two nodes
with one process each; the model size comes from the command line."""
import argparse
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class KWS(nn.Module):
    def __init__(self, d_model, layers):
        super().__init__()
        self.inp = nn.Linear(80, d_model)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model, 4, 2 * d_model, batch_first=True), layers)
        self.head = nn.Linear(d_model, 35)

    def forward(self, x):
        return self.head(self.enc(self.inp(x)).mean(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=5)
    a = ap.parse_args()
    rank = int(os.environ["RANK"])
    logging.basicConfig(format=f"%(asctime)s %(levelname)s rank{rank}: %(message)s", level=logging.INFO)
    log = logging.getLogger("kws")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    net = KWS(a.d_model, a.layers)
    log.info(f"encoder d_model={a.d_model} layers={a.layers}, {sum(p.numel() for p in net.parameters()) / 1e6:.2f}M params")
    model = DDP(net)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(a.epochs):
        for step in range(1, 101):
            x, y = torch.randn(16, 49, 80, generator=g), torch.randint(0, 35, (16,), generator=g)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 50 == 0:
                log.info(f"epoch {epoch} step {step}/100 loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
