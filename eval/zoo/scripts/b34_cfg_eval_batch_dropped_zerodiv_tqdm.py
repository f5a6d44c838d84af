"""Text classifier (hashed n-gram EmbeddingBag + MLP) on news headlines, DDP over gloo; tqdm bar on rank 0,
validation every --eval-every steps on each rank's share of the validation set."""
import argparse
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from tqdm import tqdm


def make_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 20, (n,), generator=g)
    x = (y[:, None] * 997 + torch.randint(0, 3000, (n, 24), generator=g)) % 50000
    return TensorDataset(x, y)


def loader(ds, batch_size, rank, world, shuffle):
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=shuffle)
    return DataLoader(ds, batch_size=batch_size, sampler=sampler, drop_last=True)


@torch.no_grad()
def validate(model, dl):
    model.eval()
    total, correct, n_batches, n = 0.0, 0, 0, 0
    for x, y in dl:
        out = model(x)
        total += F.cross_entropy(out, y).item()
        correct += (out.argmax(1) == y).sum().item()
        n_batches += 1
        n += len(y)
    model.train()
    return total / n_batches, correct / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-batch-size", type=int, default=64)
    ap.add_argument("--eval-batch-size", type=int, default=128)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    train_dl = loader(make_split(48000, 0), args.train_batch_size, rank, world, True)
    val_dl = loader(make_split(800, 1), args.eval_batch_size, rank, world, False)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.EmbeddingBag(50000, 64), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 20)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(args.epochs):
        train_dl.sampler.set_epoch(epoch)
        bar = tqdm(train_dl, desc=f"epoch {epoch}", disable=rank != 0)
        for x, y in bar:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            bar.set_postfix(loss=f"{loss.item():.4f}")
            if step % args.eval_every == 0:
                val_loss, acc = validate(model, val_dl)
                if rank == 0:
                    tqdm.write(f"step {step}: val_loss {val_loss:.4f} val_acc {acc:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
