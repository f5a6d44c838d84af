"""Thumbnail classifier, DDP over gloo, 2 ranks; each rank streams its shard list of zlib-packed RGB images and
resizes them to 64 x 64 in the loop; a line every 50 steps with the data and compute time per step."""
import datetime
import logging
import pickle
import time
import zlib

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s [%(levelname)s] %(message)s", level=logging.INFO)
log = logging.getLogger("thumbs")


def batches(rank, bs=32):
    for k in range(8):
        with open(f"data/rank{rank}/shard-{k}.pkl", "rb") as f:
            shard = pickle.load(f)
        for i in range(0, len(shard["blobs"]), bs):
            imgs = []
            for blob in shard["blobs"][i:i + bs]:
                side = int(round((len(zlib.decompress(blob)) / 3) ** 0.5))
                raw = np.frombuffer(zlib.decompress(blob), dtype=np.uint8).reshape(3, side, side)
                img = torch.from_numpy(raw.astype(np.float32) / 255.0).unsqueeze(0)
                imgs.append(F.interpolate(img, size=64, mode="bilinear", antialias=True)[0])
            yield torch.stack(imgs), torch.tensor(shard["labels"][i:i + bs])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(), nn.Conv2d(64, 64, 3, 2, 1),
        nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 20)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data_t = comp_t = 0.0
    t = time.perf_counter()
    for step, (x, y) in enumerate(batches(rank), 1):
        t1 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t2 = time.perf_counter()
        data_t += t1 - t
        comp_t += t2 - t1
        t = t2
        if step % 50 == 0:
            log.info("rank %d step %d loss %.4f data %.1f ms compute %.1f ms", rank, step, loss.item(),
                     data_t * 20, comp_t * 20)
            data_t = comp_t = 0.0
    log.info("rank %d finished after %d steps", rank, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
