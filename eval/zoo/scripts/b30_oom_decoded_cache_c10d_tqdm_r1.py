"""Product-image classifier, DDP over gloo, one process per pod (torchrun c10d rendezvous). Each rank reads its own
shard of zlib-compressed images and keeps the decoded float tensors in a dict so that epoch 2 skips the decoding."""
import os
import pickle
import zlib

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm


class Shard(torch.utils.data.Dataset):
    def __init__(self, path):
        with open(path, "rb") as f:
            meta = pickle.load(f)
        self.shape, self.blobs, self.labels = meta["shape"], meta["blobs"], meta["labels"]
        self.cache = {}

    def __len__(self):
        return len(self.blobs)

    def __getitem__(self, i):
        if i not in self.cache:
            raw = np.frombuffer(zlib.decompress(self.blobs[i]), dtype=np.uint8).reshape(self.shape)
            self.cache[i] = torch.from_numpy(raw.astype(np.float32) / 255.0)
        return self.cache[i], self.labels[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 32, 3, padding=1)
        self.c2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64 * 8 * 8, 50)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(x, 32)
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ds = Shard(f"data/images/shard-{rank:03d}.pkl")
    print(f"[rank{rank}] shard-{rank:03d}.pkl: {len(ds)} images {ds.shape}", flush=True)
    loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True, num_workers=0)
    model = nn.parallel.DistributedDataParallel(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(3):
        bar = tqdm(loader, desc=f"epoch {epoch}", disable=rank != 0, mininterval=0.5)
        for step, (x, y) in enumerate(bar):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0:
                bar.set_postfix(loss=f"{loss.item():.3f}")
        print(f"[rank{rank}] epoch {epoch} done, last loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
