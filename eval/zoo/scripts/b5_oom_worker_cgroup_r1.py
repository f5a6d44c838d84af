"""Audio-tagging model trained on log-mel features decoded on the fly; decoded clips are memoised per worker."""
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

N_CLIPS = 2400
SR = 16000


class Clips(Dataset):
    def __init__(self):
        self._decoded = {}  # decode once, reuse in later epochs

    def __len__(self):
        return N_CLIPS

    def _decode(self, idx):
        rng = np.random.default_rng(idx)
        wav = rng.standard_normal(SR * 8).astype(np.float32)  # 8 s clip
        frames = wav[: SR * 8 // 400 * 400].reshape(-1, 400)
        spec = np.abs(np.fft.rfft(frames, axis=1)).astype(np.float32)
        return wav, spec

    def __getitem__(self, idx):
        if idx not in self._decoded:
            self._decoded[idx] = self._decode(idx)
        wav, spec = self._decoded[idx]
        feats = np.log1p(spec[:, :64]).mean(0)
        return torch.from_numpy(feats), idx % 8


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = Clips()
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=2)
    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8)))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    t0 = time.time()
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5 == 0:
                print(f"[rank{rank}] epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f} "
                      f"elapsed {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
