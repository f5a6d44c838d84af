"""Bird-call classifier (1-D CNN on 2 s waveform crops) on DDP, 2 ranks. Each rank reads its recordings
(data/calls-<rank>/*.npy, float32 at 16 kHz) with a DataLoader (2 persistent workers) that a background thread
prefetches into a queue, so that loading overlaps the step."""
import datetime
import glob
import queue
import threading
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

CROP = 32000


class Calls(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(f"{root}/*.npy"))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        wav = np.load(self.files[i])  # the whole recording, then a crop
        start = (len(wav) - CROP) // 2
        label = int(self.files[i].rsplit("-", 1)[1].split(".")[0])
        return torch.from_numpy(wav[start:start + CROP].copy()), label


class Prefetcher:
    def __init__(self, loader, depth=4):
        self.loader, self.q = loader, queue.Queue(depth)
        self.t = threading.Thread(target=self._run, name="prefetch", daemon=True)
        self.t.start()

    def _run(self):
        for batch in self.loader:
            self.q.put(batch)
        self.q.put(None)

    def __iter__(self):
        while (b := self.q.get()) is not None:
            yield b


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
ds = Calls(f"data/calls-{rank}")
loader = DataLoader(ds, batch_size=8, num_workers=2, persistent_workers=True)
print(f"[rank{rank}] {len(ds)} recordings, {len(loader)} batches per epoch", flush=True)
torch.manual_seed(0)
net = nn.Sequential(nn.Conv1d(1, 16, 64, stride=16), nn.ReLU(), nn.Conv1d(16, 32, 16, stride=4), nn.ReLU(),
                    nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 20))
model = DDP(net)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(1, 4):
    t0 = time.time()
    for i, (x, y) in enumerate(Prefetcher(loader), 1):
        loss = F.cross_entropy(model(x.unsqueeze(1)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 10 == 0:
            print(f"[rank{rank}] epoch {epoch} step {i}/{len(loader)} loss {loss.item():.4f} "
                  f"{1000 * (time.time() - t0) / 10:.0f} ms/step", flush=True)
            t0 = time.time()
    print(f"[rank{rank}] epoch {epoch} done", flush=True)
dist.destroy_process_group()
