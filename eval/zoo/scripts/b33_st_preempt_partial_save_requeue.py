"""Review sentiment classifier on frozen pretrained word vectors (300-d, 60k words) + a trainable BiGRU head, DDP
over gloo, 2 ranks. Rank 0 writes ckpt/step_NNNN.pt every 100 steps; with --resume auto the run continues from the
newest one. tqdm bar on rank 0."""
import argparse
import glob
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.vectors = nn.Embedding(60000, 300)
        self.vectors.weight.requires_grad_(False)  # pretrained, frozen
        self.gru = nn.GRU(300, 64, batch_first=True, bidirectional=True)
        self.head = nn.Linear(128, 3)

    def forward(self, x):
        return self.head(self.gru(self.vectors(x))[0].mean(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--resume", default="")
    ap.add_argument("--steps", type=int, default=600)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Model()
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    start = 0
    if args.resume == "auto":
        ckpts = sorted(glob.glob("ckpt/step_*.pt"))
        if ckpts:
            ck = torch.load(ckpts[-1], map_location="cpu")
            model.load_state_dict(ck["model"])
            opt.load_state_dict(ck["opt"])
            start = ck["step"]
            if rank == 0:
                print(f"resuming from {ckpts[-1]} (step {start})", flush=True)
    ddp = nn.parallel.DistributedDataParallel(model)
    g = torch.Generator().manual_seed(rank * 1000 + start)
    bar = tqdm(total=args.steps, initial=start, desc="train", disable=rank != 0, mininterval=1.0)
    for step in range(start + 1, args.steps + 1):
        x = torch.randint(0, 60000, (32, 30), generator=g)
        y = (x[:, 0] % 3)
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
        if rank == 0 and step % 100 == 0:
            os.makedirs("ckpt", exist_ok=True)
            path = f"ckpt/step_{step:04d}.pt"
            tqdm.write(f"saving checkpoint {path}")
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
            tqdm.write(f"saved {path} ({os.path.getsize(path) / 2**20:.0f} MB)")
    bar.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
