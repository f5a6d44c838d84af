"""Audio-event tagger on precomputed log-mel clips, DDP over gloo started with torch.multiprocessing.spawn.
usage: python train_tagger.py --data-dir DIR [--world-size N] [--port P]"""
import argparse
import json
import logging
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def setup_logging(rank):
    logging.basicConfig(format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s", level=logging.INFO)
    return logging.getLogger("tagger")


class Clips(torch.utils.data.Dataset):
    def __init__(self, root, split):
        with open(os.path.join(root, "meta.json")) as f:
            self.meta = json.load(f)
        self.x = np.load(os.path.join(root, f"{split}_mels.npy"), mmap_mode="r")
        self.y = np.load(os.path.join(root, f"{split}_labels.npy"))

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.from_numpy(np.array(self.x[i])), torch.from_numpy(self.y[i]).float()


def run(rank, args):
    log = setup_logging(rank)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.world_size)
    log.info("process group ready (%d ranks), loading %s", args.world_size, args.data_dir)
    train = Clips(args.data_dir, "train")
    sampler = torch.utils.data.distributed.DistributedSampler(train)
    loader = torch.utils.data.DataLoader(train, batch_size=32, sampler=sampler, num_workers=2)
    n_cls = train.meta["num_classes"]
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv1d(64, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(128, n_cls)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader, 1):
            loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--port", type=int, default=29500)
    args = ap.parse_args()
    mp.spawn(run, args=(args,), nprocs=args.world_size)
