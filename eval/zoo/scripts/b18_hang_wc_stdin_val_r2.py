"""Code-completion LM (tiny transformer), DDP over gloo, 3 ranks. Each rank validates on its share of the
held-out files; the sizes are counted with wc first so every rank knows the number of validation steps."""
import glob
import logging
import os
import subprocess
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s %(levelname)s [rank{RANK}] %(message)s", level=logging.INFO)
log = logging.getLogger("lm")


def count_lines(files):
    out = subprocess.run(["wc", "-l", *files], capture_output=True, text=True, check=True).stdout
    return int(out.strip().splitlines()[-1].split()[0])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    world = dist.get_world_size()
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    model = DDP(nn.Sequential(nn.Embedding(512, 64), nn.TransformerEncoder(layer, 2), nn.Linear(64, 512)))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(RANK)
    val_files = sorted(glob.glob("data/val/*.py.txt"))[RANK::world]
    for step in range(1, 401):
        x = torch.randint(0, 512, (16, 32), generator=g)
        loss = nn.functional.cross_entropy(model(x[:, :-1]).reshape(-1, 512), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 40 == 0:
            log.info(f"step {step}/400 loss {loss.item():.4f}")
        if step % 200 == 0:
            n = torch.tensor([count_lines(val_files)])
            dist.all_reduce(n, op=dist.ReduceOp.MAX)
            log.info(f"validation: {len(val_files)} files, {int(n)} steps max")
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
