"""Click-through-rate model trained with DDP on two nodes; after the process group is up each rank opens its reader
of the feature store, authenticated with FEATURE_STORE_TOKEN from the node's environment (the secret the job's
profile exports), and streams its shard of the day's impressions."""
import datetime
import hashlib
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class FeatureStoreReader:
    def __init__(self, table, shard, num_shards):
        self.token = os.environ["FEATURE_STORE_TOKEN"]
        self.table, self.shard, self.num_shards = table, shard, num_shards
        seed = int(hashlib.sha1(f"{table}/{shard}".encode()).hexdigest()[:8], 16)
        self.g = torch.Generator().manual_seed(seed)

    def batch(self, n=512):
        feats = torch.randint(0, 100000, (n, 16), generator=self.g)
        clicks = (feats[:, 0] % 7 == 0).float()
        return feats, clicks


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    print(f"[rank {rank}] process group up (world {world})", flush=True)
    reader = FeatureStoreReader("impressions_2026_12_06", rank, world)
    print(f"[rank {rank}] feature store reader ready: {reader.table} shard {rank}/{world}", flush=True)
    model = DDP(nn.Sequential(nn.EmbeddingBag(100000, 32), nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 201):
        x, y = reader.batch()
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"[rank {rank}] step {step} logloss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
