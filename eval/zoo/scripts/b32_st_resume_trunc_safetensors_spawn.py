"""Speech-command classifier (1-D conv over log-mel frames), DDP over gloo launched with torch.multiprocessing.spawn
on one machine; resumes from checkpoints/last/ (model.safetensors + trainer_state.json) when it exists."""
import json
import logging
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

CKPT = "checkpoints/last"


def build():
    return nn.Sequential(nn.Conv1d(40, 128, 5, padding=2), nn.ReLU(), nn.Conv1d(128, 256, 5, padding=2), nn.ReLU(),
                         nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 35))


def worker(rank, world, port):
    logging.basicConfig(format="%(asctime)s %(processName)s %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("kws")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    model = build()
    start = 0
    if os.path.isdir(CKPT):
        state = json.load(open(os.path.join(CKPT, "trainer_state.json")))
        log.info("resuming from %s (step %d)", CKPT, state["step"])
        model.load_state_dict(load_file(os.path.join(CKPT, "model.safetensors")))
        start = state["step"]
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1000 * rank + start)
    for step in range(start + 1, start + 401):
        x = torch.randn(32, 40, 98, generator=g)
        y = torch.randint(0, 35, (32,), generator=g)
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d loss %.4f", step, loss.item())
        if step % 200 == 0 and rank == 0:
            os.makedirs(CKPT, exist_ok=True)
            save_file(model.state_dict(), os.path.join(CKPT, "model.safetensors"))
            json.dump({"step": step}, open(os.path.join(CKPT, "trainer_state.json"), "w"))
            log.info("saved %s at step %d", CKPT, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[1])
    mp.spawn(worker, args=(2, port), nprocs=2)
