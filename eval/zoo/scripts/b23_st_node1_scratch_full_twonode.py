"""Image-patch autoencoder, DDP over gloo on two nodes (one process each); every node keeps its own copy of the
latest weights on node-local scratch (safetensors), as the cluster guide recommends for fast restarts."""
import argparse
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from safetensors.torch import save_file
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scratch", default="scratch")
    ap.add_argument("--save-every", type=int, default=150)
    a = ap.parse_args()
    node, rank = int(os.environ["GROUP_RANK"]), int(os.environ["RANK"])
    logging.basicConfig(format=f"%(asctime)s [node{node}:rank{rank}] %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("ae")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(768, 512), nn.GELU(), nn.Linear(512, 128), nn.GELU(),
                              nn.Linear(128, 512), nn.GELU(), nn.Linear(512, 768)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    os.makedirs(os.path.join(a.scratch, "ae-patches"), exist_ok=True)
    t0 = time.time()
    for step in range(1, 601):
        x = torch.randn(64, 768, generator=g)
        loss = nn.functional.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info(f"step {step}/600 loss {loss.item():.4f} ({time.time() - t0:.1f}s)")
        if step % a.save_every == 0 and int(os.environ["LOCAL_RANK"]) == 0:
            path = os.path.join(a.scratch, "ae-patches", f"step_{step:05d}.safetensors")
            save_file({k: v.contiguous() for k, v in model.module.state_dict().items()}, path)
            log.info(f"wrote {path}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
