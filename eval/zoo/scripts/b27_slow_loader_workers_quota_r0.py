"""Satellite-tile segmentation (tiny U-Net-ish conv net), DDP over gloo, 2 processes, a DataLoader with 2 workers per
rank doing the tile decode and augmentation. Rank 0 shows a tqdm bar; every rank logs data wait and compute time
every 50 steps."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from tqdm import tqdm


class Tiles(Dataset):
    def __len__(self):
        return 24000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, 48, 48, generator=g)
        for _ in range(6):  # decode + colour jitter + blur, as the augmentation pipeline does
            img = torch.nn.functional.avg_pool2d(img.unsqueeze(0), 3, 1, 1).squeeze(0) * 1.01
        mask = (img.mean(0) > 0.5).long()
        return img, mask


def main():
    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    ds = Tiles()
    dl = DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds, seed=0), num_workers=2, persistent_workers=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 2, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    bar = tqdm(total=700, desc="epoch 0", disable=rank != 0, mininterval=0.5)
    data_t = comp_t = 0.0
    t = time.time()
    for step, (img, mask) in enumerate(dl, 1):
        t1 = time.time()
        data_t += t1 - t
        loss = nn.functional.cross_entropy(model(img), mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t = time.time()
        comp_t += t - t1
        bar.update(1)
        if step % 50 == 0:
            bar.write(f"[rank{rank}] step {step} loss {loss.item():.4f} data {data_t / 50 * 1000:.1f} ms "
                      f"compute {comp_t / 50 * 1000:.1f} ms") if rank == 0 else print(
                f"[rank{rank}] step {step} loss {loss.item():.4f} data {data_t / 50 * 1000:.1f} ms "
                f"compute {comp_t / 50 * 1000:.1f} ms", flush=True)
            data_t = comp_t = 0.0
        if step == 700:
            break
    bar.close()
    dist.barrier()
    if rank == 0:
        print("epoch 0 finished, saving", os.path.join("out", "seg.pt"), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
