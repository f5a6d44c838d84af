"""Audio-tagging model with a multi-worker DataLoader (feature extraction in workers), DDP/gloo."""
import datetime
import math
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Clips(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        wave = torch.randn(16000, generator=g)
        spec = torch.stft(wave, 400, 160, window=torch.hann_window(400), return_complex=True).abs()
        return spec[:64].log1p(), i % 20


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    ds = Clips()
    loader = DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds), num_workers=6, persistent_workers=True,
                        prefetch_factor=4)
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(64 * 101, 256), nn.ReLU(), nn.Linear(256, 20)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    print(f"[rank {rank}] {len(loader)} batches per epoch, 6 loader workers")
    for epoch in range(2):
        t0 = time.time()
        for i, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and i % 10 == 0:
                print(f"epoch {epoch} batch {i} loss {loss.item():.3f}")
        print(f"[rank {rank}] epoch {epoch} {time.time() - t0:.1f}s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
