"""Audio-feature regressor with an mmengine-like runner log; every rank streams its pre-extracted feature shard
(float32 rows of 1024 features) from the shared dataset volume mounted at ./shared."""
import datetime
import logging
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

logging.basicConfig(format="%(asctime)s - mmengine - %(levelname)s - %(message)s", datefmt="%Y/%m/%d %H:%M:%S",
                    level=logging.INFO, stream=sys.stdout)
logger = logging.getLogger("mmengine")

ROW = 1024


class Shard(Dataset):
    def __init__(self, path):
        self.mm = np.memmap(path, dtype=np.float32, mode="r").reshape(-1, ROW)

    def __len__(self):
        return len(self.mm)

    def __getitem__(self, i):
        r = torch.from_numpy(np.array(self.mm[i]))
        return r[:-1], r[-1:]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    if rank != 0:
        logger.setLevel(logging.WARNING)
    torch.set_num_threads(1)
    ds = Shard(f"shared/feats/shard-{rank:02d}.f32")
    loader = DataLoader(ds, batch_size=32, shuffle=False, drop_last=True)
    max_iters, interval = 600, 10
    model = DDP(nn.Sequential(nn.Linear(ROW - 1, 256), nn.ReLU(), nn.Linear(256, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    logger.info(f"Distributed training is enabled, world size {dist.get_world_size()}")
    logger.info(f"Checkpoints will be saved to work_dirs/feat_reg by HardDiskBackend.")
    it, t_end, times, dtimes, t0 = 0, time.time(), [], [], time.time()
    for x, y in loader:
        dtimes.append(time.time() - t_end)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        it += 1
        times.append(time.time() - t_end)
        t_end = time.time()
        if it % interval == 0:
            avg = sum(times) / len(times)
            eta = datetime.timedelta(seconds=int(avg * (max_iters - it)))
            logger.info(f"Iter(train) [{it:>3d}/{max_iters}]  base_lr: 1.0000e-03 lr: 1.0000e-03  eta: {eta}  "
                        f"time: {avg:.4f}  data_time: {sum(dtimes) / len(dtimes):.4f}  memory: 0  "
                        f"loss: {loss.item():.4f}")
            times, dtimes = [], []
        if it == max_iters:
            break
    logger.info(f"Saving checkpoint at {max_iters} iterations")
    if rank == 0:
        torch.save(model.module.state_dict(), "iter_600.pth")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
