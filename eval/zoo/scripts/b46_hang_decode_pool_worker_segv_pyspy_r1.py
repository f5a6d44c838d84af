"""Keyword-spotting model (a small 1-D CNN over spectrogram frames) on DDP, 2 ranks. The clips are stored in the
team's .spec format and decoded by the native decoder (native/libspec.so, ctypes); each rank's Dataset decodes a
batch's files in parallel on a small multiprocessing pool (its __getitems__), and the DataLoader runs in the main
process."""
import ctypes
import datetime
import glob
import multiprocessing as mp
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

FRAMES, BINS = 98, 40
_lib = None


def decode_spec(path):
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL("native/libspec.so")
    raw = open(path, "rb").read()
    out = np.empty(FRAMES * BINS, dtype=np.float32)
    n = _lib.spec_decode(raw, len(raw), out.ctypes.data_as(ctypes.c_void_p), out.size)
    if n < 0:
        raise ValueError(f"{path}: bad .spec header")
    return out.reshape(FRAMES, BINS), int(path.rsplit("_", 1)[1].split(".")[0])


class SpecClips(Dataset):
    def __init__(self, folder):
        self.files = sorted(glob.glob(f"{folder}/*.spec"))
        self.pool = None

    def __len__(self):
        return len(self.files)

    def __getitems__(self, idx):
        if self.pool is None:
            self.pool = mp.get_context("fork").Pool(2)
        return self.pool.map(decode_spec, [self.files[i] for i in idx])


def collate(items):
    return torch.from_numpy(np.stack([a for a, _ in items])), torch.tensor([b for _, b in items])


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
ds = SpecClips(f"data/clips-{rank}")
loader = DataLoader(ds, batch_size=32, shuffle=False, num_workers=0, collate_fn=collate)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Conv1d(BINS, 64, 5, padding=2), nn.ReLU(), nn.Conv1d(64, 64, 5, padding=2), nn.ReLU(),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 12)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
print(f"rank {rank}: {len(ds)} clips, decode pool of 2", flush=True)
for epoch in range(2):
    t0 = time.time()
    for it, (x, y) in enumerate(loader, 1):
        loss = F.cross_entropy(model(x.transpose(1, 2)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 0:
            print(f"Epoch {epoch} | iter {it}/{len(loader)} | rank {rank} | loss {loss.item():.4f} | "
                  f"{(time.time() - t0) / it:.3f} s/it", flush=True)
dist.barrier()
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()
