"""Thumbnail classifier over packed record files (one per rank: records/part-<rank>.rec), DDP over gloo,
3 ranks, 2 DataLoader workers per rank. Records are decoded by the team's fast raw-pixel decoder
(a memmove into a preallocated buffer, as the C extension does); tqdm bar on rank 0."""
import ctypes
import struct

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

HDR = struct.Struct("<HHIB")  # height, width, payload bytes, label


def fast_decode(buf, off):
    h, w, n, label = HDR.unpack_from(buf, off)
    out = np.empty((h, w, 3), dtype=np.uint8)
    src = (ctypes.c_char * len(buf)).from_buffer_copy(buf)
    ctypes.memmove(out.ctypes.data, ctypes.addressof(src) + off + HDR.size, n)
    return out, label


class RecordFile(Dataset):
    def __init__(self, path):
        self.path = path
        self.offsets = []
        raw = open(path, "rb").read()
        off = 0
        while off < len(raw):
            self.offsets.append(off)
            h, w, _, _ = HDR.unpack_from(raw, off)
            off += HDR.size + h * w * 3
        self.raw = None

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        if self.raw is None:
            self.raw = open(self.path, "rb").read()
        img, label = fast_decode(self.raw, self.offsets[i])
        return torch.from_numpy(img).permute(2, 0, 1).float() / 255, label


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = RecordFile(f"records/part-{rank}.rec")
    dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                              nn.Linear(256, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    print(f"rank {rank}: {len(ds)} records from part-{rank}.rec", flush=True)
    for epoch in range(3):
        bar = tqdm(dl, desc=f"epoch {epoch}", disable=rank != 0)
        for x, y in bar:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
        print(f"rank {rank}: epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
