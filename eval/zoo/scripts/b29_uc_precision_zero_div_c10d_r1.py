"""Card-fraud classifier (MLP on 32 transaction features), DDP over gloo, 3 ranks under torchrun. After every epoch
each rank scores its own validation partition and reports precision/recall at 0.5; the averaged numbers are logged."""
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

EPOCHS = 6


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    tr = np.load(f"data/train-{rank}.npz")
    va = np.load(f"data/val-{rank}.npz")
    xtr, ytr = torch.from_numpy(tr["x"]), torch.from_numpy(tr["y"]).float()
    xva, yva = torch.from_numpy(va["x"]), torch.from_numpy(va["y"]).float()
    print(f"rank {rank}: {len(ytr)} train rows, {len(yva)} val rows", flush=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(EPOCHS):
        perm = torch.randperm(len(ytr), generator=torch.Generator().manual_seed(epoch * 10 + rank))
        for i, s in enumerate(range(0, len(ytr) - 255, 256), 1):
            idx = perm[s:s + 256]
            loss = nn.functional.binary_cross_entropy_with_logits(model(xtr[idx]).squeeze(1), ytr[idx],
                                                                  pos_weight=torch.tensor(8.0))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 20 == 0:
                print(f"rank {rank}: epoch {epoch} iter {i} loss {loss.item():.4f}", flush=True)
        with torch.no_grad():
            pred = (torch.sigmoid(model.module(xva).squeeze(1)) > 0.5).long()
        tp = int(((pred == 1) & (yva == 1)).sum())
        fp = int(((pred == 1) & (yva == 0)).sum())
        fn = int(((pred == 0) & (yva == 1)).sum())
        precision = tp / (tp + fp)
        recall = tp / (tp + fn) if tp + fn else 0.0
        m = torch.tensor([precision, recall])
        dist.all_reduce(m)
        m /= world
        if rank == 0:
            print(f"epoch {epoch}: val precision {m[0]:.3f} recall {m[1]:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
