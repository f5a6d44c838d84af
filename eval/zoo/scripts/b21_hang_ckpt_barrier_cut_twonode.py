"""Tabular autoencoder for anomaly scores, DDP over gloo on two nodes; rank 0 writes a checkpoint every 150 steps
and every rank waits for it at a barrier."""
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - [rank%(rank)s] %(message)s", level=logging.INFO)
log = logging.LoggerAdapter(logging.getLogger("anomaly_ae"), {"rank": RANK})


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    log.info("initialized: world_size=%d", dist.get_world_size())
    torch.manual_seed(0)
    ae = nn.Sequential(nn.Linear(120, 1024), nn.ReLU(), nn.Linear(1024, 32), nn.ReLU(), nn.Linear(32, 1024), nn.ReLU(),
                       nn.Linear(1024, 120))
    model = DDP(ae)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(RANK)
    os.makedirs("ckpt", exist_ok=True)
    # reconstruction errors of the reference set, kept with each checkpoint to calibrate the anomaly threshold
    ref_errors = torch.rand(48_000_000)
    for step in range(1, 901):
        x = torch.randn(128, 120, generator=g)
        loss = nn.functional.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("step %d/900 recon_loss %.5f", step, loss.item())
        if step % 150 == 0:
            if RANK == 0:
                path = f"ckpt/step_{step:06d}.pt"
                log.info("saving checkpoint %s", path)
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step,
                            "ref_errors": ref_errors}, path)
                log.info("checkpoint saved")
            dist.barrier()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
