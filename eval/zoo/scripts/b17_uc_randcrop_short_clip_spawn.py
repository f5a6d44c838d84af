"""Audio event tagging on 1-s random crops of 16 kHz clips, torch.multiprocessing.spawn (tcp:// init),
DDP over gloo, 2 DataLoader workers per rank."""
import argparse
import glob
import logging
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

CROP = 16000


class Clips(Dataset):
    def __init__(self, files):
        self.files = files
        self.labels = [int(f.rsplit("_", 1)[1].split(".")[0]) for f in files]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        wav = np.load(self.files[i], mmap_mode="r")
        start = np.random.randint(0, len(wav) - CROP)
        x = torch.from_numpy(np.array(wav[start:start + CROP], dtype=np.float32) / 32768.0)
        return x.view(1, -1), self.labels[i]


def run(rank, args):
    logging.basicConfig(format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s", level=logging.INFO)
    log = logging.getLogger("tagger")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.nprocs, timeout=timedelta(seconds=20))
    ds = Clips(sorted(glob.glob("data/clips/*.npy")))
    sampler = DistributedSampler(ds, seed=3)
    dl = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=2)
    model = DDP(nn.Sequential(nn.Conv1d(1, 32, 400, stride=160), nn.ReLU(), nn.Conv1d(32, 64, 3), nn.ReLU(),
                              nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 20)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    log.info(f"{len(ds)} clips, {len(dl)} batches per epoch")
    for epoch in range(3):
        sampler.set_epoch(epoch)
        t0 = time.time()
        for step, (x, y) in enumerate(dl, 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                log.info(f"epoch {epoch} step {step}/{len(dl)} loss {loss.item():.4f} {(time.time() - t0) / 10:.3f}s/it")
                t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--port", type=int, default=29512)
    args = ap.parse_args()
    mp.spawn(run, args=(args,), nprocs=args.nprocs)
