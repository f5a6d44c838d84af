"""Rental-price regressor (MLP over listing features), DDP over gloo; each rank reads its own city's listings CSV with
pandas and standardises the columns; a non-finite-loss guard before backward; plain prints."""
import time

import pandas as pd
import torch
import torch.distributed as dist
import torch.nn as nn

CITIES = ["berlin", "hamburg", "munich"]


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    df = pd.read_csv(f"data/listings-{CITIES[rank]}.csv")
    feats = [c for c in df.columns if c not in ("listing_id", "rent_eur")]
    x = (df[feats] - df[feats].mean()) / df[feats].std()
    x = torch.tensor(x.to_numpy(), dtype=torch.float32)
    y = torch.tensor(df["rent_eur"].to_numpy(), dtype=torch.float32).log()
    print(f"rank {rank}: {len(df)} listings, {len(feats)} features from data/listings-{CITIES[rank]}.csv", flush=True)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(len(feats), 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    step, t0 = 0, time.time()
    for epoch in range(5):
        perm = torch.randperm(len(x), generator=g)
        for k in range(0, len(x) - 63, 64):
            idx = perm[k:k + 64]
            step += 1
            loss = nn.functional.mse_loss(model(x[idx]).squeeze(1), y[idx])
            if not torch.isfinite(loss):
                raise FloatingPointError(f"non-finite loss {loss.item()} at epoch {epoch} step {step}")
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 50 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
    print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
