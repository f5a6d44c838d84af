"""Speech-to-intent model, DDP over gloo under torch.multiprocessing.spawn; each process reads its own packed
feature file (data/feats-<rank>.pack: a 16-byte header per utterance with its frame count, then float16 frames)
through a DataLoader with 2 workers that read the utterances zero-copy from a memory map."""
import ctypes
import logging
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


class Packed(torch.utils.data.Dataset):
    def __init__(self, path):
        self.buf = np.memmap(path, dtype=np.uint8, mode="r")
        self.offsets = np.load(path.replace(".pack", ".offsets.npy"))

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        off = int(self.offsets[i])
        frames, label = np.frombuffer(self.buf[off:off + 16], dtype=np.int64)
        raw = ctypes.string_at(self.buf.ctypes.data + off + 16, int(frames) * 40 * 2)
        x = torch.from_numpy(np.frombuffer(raw, dtype=np.float16).reshape(-1, 40).astype(np.float32))
        return x[:100], int(label)


def run(rank, world, port):
    logging.basicConfig(format="%(asctime)s %(processName)s %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("s2i")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    ds = Packed(f"data/feats-{rank}.pack")
    loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=2)
    log.info("rank %d: %d utterances", rank, len(ds))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Flatten(), nn.Linear(4000, 256), nn.ReLU(),
                                                              nn.Linear(256, 31)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step, (x, y) in enumerate(loader, 1):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("rank %d step %d/%d loss %.4f", rank, step, len(loader), loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2, int(sys.argv[1])), nprocs=2)
