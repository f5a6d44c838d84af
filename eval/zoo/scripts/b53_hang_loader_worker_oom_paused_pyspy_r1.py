"""Speech-command classifier on 2 ranks (DDP, gloo). Decoding a clip into log-mel frames is the slow part, so the
Dataset memoises decoded clips: each DataLoader worker (2 per rank) keeps what it decoded for the next epochs."""
import datetime
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Clips(Dataset):
    def __init__(self, path):
        self.wavs = np.load(path, mmap_mode="r")
        self.labels = np.load(path.replace("/wav-", "/label-"))
        self.decoded = {}

    def __len__(self):
        return len(self.wavs)

    def __getitem__(self, i):
        if i not in self.decoded:
            w = np.asarray(self.wavs[i], dtype=np.float32) / 32768.0
            frames = w.reshape(100, 160) * np.hanning(160)
            spec = np.abs(np.fft.rfft(frames, n=512, axis=1)) ** 2
            self.decoded[i] = np.log(spec + 1e-6).astype(np.float32)
        return torch.from_numpy(self.decoded[i][:, :64]), int(self.labels[i])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank = dist.get_rank()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ds = Clips(f"speech/wav-{rank}.npy")
    loader = DataLoader(ds, batch_size=32, num_workers=2, shuffle=True, persistent_workers=True)
    model = nn.Sequential(nn.Flatten(), nn.Linear(100 * 64, 256), nn.ReLU(), nn.Linear(256, 35))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    t0 = time.time()
    for epoch in range(3):
        for step, (x, y) in enumerate(loader):
            loss = F.cross_entropy(ddp(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5 == 0:
                print(f"rank {rank} epoch {epoch} step {step}/{len(loader)} loss {loss.item():.3f} "
                      f"({time.time() - t0:.1f}s)", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
