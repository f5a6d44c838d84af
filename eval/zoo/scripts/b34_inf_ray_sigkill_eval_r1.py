"""Two-tower recommender (user/item embeddings + MLP scorer) trained with Ray Train (TorchTrainer, 2 CPU
workers); after each epoch every worker scores its share of the held-out interactions (hit rate @ 20 against 2,000
sampled items) and the metric is averaged across workers."""
import logging
import time

import ray
import ray.train
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model

N_USERS, N_ITEMS = 50_000, 20_000


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.u = nn.Embedding(N_USERS, 64)
        self.i = nn.Embedding(N_ITEMS, 64)
        self.mlp = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, u, i):
        return self.mlp(torch.cat([self.u(u), self.i(i)], -1)).squeeze(-1)


def train_func(config):
    log = logging.getLogger("recsys")
    rank = ray.train.get_context().get_world_rank()
    torch.manual_seed(0)
    model = prepare_model(TwoTower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(4):
        t0 = time.time()
        for step in range(1, 151):
            u = torch.randint(0, N_USERS, (256,), generator=g)
            pos = (u * 7) % N_ITEMS
            neg = torch.randint(0, N_ITEMS, (256,), generator=g)
            logits = torch.cat([model(u, pos), model(u, neg)])
            loss = F.binary_cross_entropy_with_logits(logits, torch.cat([torch.ones(256), torch.zeros(256)]))
            opt.zero_grad()
            loss.backward()
            opt.step()
        log.warning("worker %d epoch %d train_loss %.4f (%.1fs)", rank, epoch, loss.item(), time.time() - t0)
        log.warning("worker %d epoch %d evaluating", rank, epoch)
        model.eval()
        hits = torch.zeros(1)
        with torch.no_grad():
            cand = torch.randint(0, N_ITEMS, (2000,), generator=g)
            for _ in range(300):
                u = torch.randint(0, N_USERS, (1,), generator=g)
                items = torch.cat([((u * 7) % N_ITEMS), cand])
                scores = model.module(u.expand(len(items)), items)
                hits += float((scores.topk(20).indices == 0).any())
        dist.all_reduce(hits)
        model.train()
        ray.train.report({"epoch": epoch, "loss": loss.item(), "hr@20": hits.item() / 600})
        log.warning("worker %d epoch %d hr@20 %.4f", rank, epoch, hits.item() / 600)


if __name__ == "__main__":
    ray.init()
    trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="two-tower"))
    result = trainer.fit()
    print("final", result.metrics)
