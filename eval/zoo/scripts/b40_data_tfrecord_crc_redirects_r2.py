"""Click-through model trained on the feature export of the ads pipeline (TFRecord files written by the Beam job,
one per rank: data/train-0000R-of-00003.tfrecord). Each record is a little-endian label (int64) followed by 96
float32 features; the reader checks the length and data CRCs as TensorFlow's reader does. DDP over gloo."""
import struct
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset

_POLY = 0x82F63B78
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class DataLossError(Exception):
    pass


def read_tfrecord(path):
    with open(path, "rb") as fh:
        while True:
            offset = fh.tell()
            header = fh.read(12)
            if not header:
                return
            length, len_crc = struct.unpack("<QI", header)
            if masked_crc(header[:8]) != len_crc:
                raise DataLossError(f"corrupted record at {offset} in {path} (length crc mismatch)")
            data = fh.read(length)
            (data_crc,) = struct.unpack("<I", fh.read(4))
            if masked_crc(data) != data_crc:
                raise DataLossError(f"corrupted record at {offset} in {path} (data crc mismatch)")
            yield data


class ClickRecords(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        for rec in read_tfrecord(self.path):
            label = struct.unpack_from("<q", rec)[0]
            x = np.frombuffer(rec, dtype="<f4", offset=8)
            yield torch.from_numpy(x.copy()), torch.tensor(float(label))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    path = f"data/train-{rank:05d}-of-00003.tfrecord"
    loader = DataLoader(ClickRecords(path), batch_size=64, num_workers=1)
    model = DDP(nn.Sequential(nn.Linear(96, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
    print(f"rank {rank}: reading {path}", flush=True)
    t0 = time.time()
    for epoch in range(2):
        for step, (x, y) in enumerate(loader, 1):
            loss = F.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 25 == 0:
                print(f"rank {rank}: epoch {epoch} step {step} logloss {loss.item():.4f} "
                      f"{(time.time() - t0) * 40:.0f} ms/step", flush=True)
                t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
