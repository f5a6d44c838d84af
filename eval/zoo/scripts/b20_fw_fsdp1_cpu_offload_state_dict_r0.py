"""Tabular transformer (feature tokens + 4 encoder blocks) for fraud scoring, sharded with FSDP over gloo on the CPU
partition. A full checkpoint every 50 steps, gathered on rank 0 with the usual recipe
(FULL_STATE_DICT, offload_to_cpu, rank0_only)."""
import datetime
import functools
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullStateDictConfig, StateDictType
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

RANK = int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s %(levelname)s [rank{RANK}] %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("fraud")
N_FEAT, D = 32, 96


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(D, 4, 4 * D, batch_first=True, dropout=0.0)

    def forward(self, x):
        return self.layer(x)


class FraudNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.feat = nn.Linear(1, D)
        self.col = nn.Parameter(torch.randn(1, N_FEAT, D) * 0.02)
        self.blocks = nn.Sequential(*[Block() for _ in range(4)])
        self.out = nn.Linear(D, 1)

    def forward(self, x):
        h = self.feat(x.unsqueeze(-1)) + self.col
        return self.out(self.blocks(h).mean(1)).squeeze(-1)


def save_full(model, path):
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        sd = model.state_dict()
    if RANK == 0:
        torch.save(sd, path)
        log.info("saved %s (%d tensors)", path, len(sd))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    model = FSDP(FraudNet(), auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=torch.device("cpu"))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    log.info("FSDP model ready, world size %d", dist.get_world_size())
    os.makedirs("ckpt", exist_ok=True)
    g = torch.Generator().manual_seed(RANK)
    t0 = time.time()
    for step in range(1, 301):
        x = torch.randn(64, N_FEAT, generator=g)
        y = (x[:, :4].sum(1) > 1.5).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("step %d loss %.4f (%.1f ms/step)", step, loss.item(), (time.time() - t0) / step * 1000)
        if step % 50 == 0:
            save_full(model, f"ckpt/fraud_step{step}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
