"""Speech encoder pre-training (conv front-end + MLP over log-mel windows), DDP over gloo, 2 ranks. Every 100 steps
the model and AdamW state are written with torch.distributed.checkpoint into ckpt/step_NNNNNN/ (each rank writes its
share)."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import get_state_dict
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s | rank " + os.environ.get("RANK", "0") + " | %(levelname)s | %(message)s",
                    level=logging.INFO)
log = logging.getLogger("speech-pt")


def build():
    return nn.Sequential(nn.Conv1d(80, 256, 5, stride=2), nn.GELU(), nn.Conv1d(256, 256, 5, stride=2), nn.GELU(),
                         nn.Flatten(), nn.Linear(256 * 22, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(),
                         nn.Linear(1024, 512))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = build()
    ddp = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 501):
        x = torch.randn(16, 80, 100, generator=g)
        target = torch.randn(16, 512, generator=g) * 0.1 + x[:, :1, :].mean(2).repeat(1, 512)
        loss = nn.functional.mse_loss(ddp(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("step %d/500 loss %.4f %.1f ms/step", step, loss.item(), (time.time() - t0) * 50)
            t0 = time.time()
        if step % 100 == 0:
            path = f"ckpt/step_{step:06d}"
            t1 = time.time()
            msd, osd = get_state_dict(model, opt)
            dcp.save({"model": msd, "optim": osd}, checkpoint_id=path)
            log.info("checkpoint %s written in %.2fs", path, time.time() - t1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
