"""Keyword-spotting CNN on 1 s clips, DDP over gloo, 4 processes; each rank's DataLoader (2 persistent workers)
computes speed-perturbed multi-resolution spectrograms on the fly. tqdm bar on rank 0; every rank prints its data-wait and compute
time at the end of each epoch."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from tqdm import tqdm


class Clips(Dataset):
    def __len__(self):
        return 4 * 32 * 32

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        wav = torch.randn(16000, generator=g)
        speed = 0.9 + 0.2 * torch.rand(1, generator=g).item()  # speed perturbation
        wav = F.interpolate(wav[None, None], size=int(16000 / speed), mode="linear")[0, 0][:16000]
        wav = F.pad(wav, (0, 16000 - len(wav)))
        feats = []
        for n_fft in (256, 512, 1024, 2048):  # multi-resolution spectrogram, 32 bands x 32 frames each
            spec = torch.stft(wav, n_fft, n_fft // 4, window=torch.hann_window(n_fft), return_complex=True).abs() ** 2
            feats.append(F.adaptive_avg_pool2d(torch.log1p(spec)[None], (32, 32))[0])
        return torch.stack(feats), i % 12


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    ds = Clips()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank)
    dl = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=2, persistent_workers=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv2d(4, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 12)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        wait = compute = 0.0
        t = time.time()
        for x, y in tqdm(dl, desc=f"epoch {epoch}", disable=rank != 0, mininterval=1.0):
            t1 = time.time()
            wait += t1 - t
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            t = time.time()
            compute += t - t1
        print(f"rank {rank} epoch {epoch} done: loss {loss.item():.3f} data_wait {wait:.1f}s compute {compute:.1f}s",
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
