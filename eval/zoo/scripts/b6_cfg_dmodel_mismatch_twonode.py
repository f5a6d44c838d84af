"""Speech-feature encoder, DDP over gloo on two nodes (one process per node)."""
import argparse
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Encoder(nn.Module):
    def __init__(self, n_mels, d_model, layers):
        super().__init__()
        self.inp = nn.Linear(n_mels, d_model)
        self.layers = nn.ModuleList([nn.Sequential(nn.LayerNorm(d_model), nn.Linear(d_model, d_model), nn.GELU())
                                     for _ in range(layers)])
        self.ctc = nn.Linear(d_model, 32)

    def forward(self, x):
        h = self.inp(x)
        for layer in self.layers:
            h = h + layer(h)
        return self.ctc(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-mels", type=int, default=80)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    print(f"[rank {rank}] config: {vars(args)}")
    model = DDP(Encoder(args.n_mels, args.d_model, args.layers))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        x = torch.randn(8, 100, args.n_mels)
        y = torch.randint(0, 32, (8, 100))
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.3f} ({time.time() - t0:.1f}s)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
