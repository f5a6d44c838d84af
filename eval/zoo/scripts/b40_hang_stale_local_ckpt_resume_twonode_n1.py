"""Protein-family classifier (1-D CNN over one-hot residues), DDP over gloo, one worker per node on two CPU nodes
(static rendezvous). Checkpoints go to the node-local scratch ($LOCAL_SCRATCH/ckpt, synced between nodes by the
cluster's post-save hook); on start each worker resumes from the step named in its scratch's `latest` file."""
import json
import os
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

MAX_STEPS = 400


def net():
    return nn.Sequential(nn.Conv1d(21, 96, 9, padding=4), nn.ReLU(), nn.Conv1d(96, 96, 9, padding=4), nn.ReLU(),
                         nn.AdaptiveMaxPool1d(1), nn.Flatten(), nn.Linear(96, 120))


def log(**kv):
    print(json.dumps({"ts": round(time.time(), 3), "host": socket.gethostname(),
                      "node": int(os.environ.get("GROUP_RANK", 0)), **kv}), flush=True)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    ckdir = os.path.join(os.environ["LOCAL_SCRATCH"], "ckpt")
    model = net()
    opt = torch.optim.Adam(model.parameters(), lr=5e-4)
    start = 0
    latest = os.path.join(ckdir, "latest")
    if os.path.exists(latest):
        name = open(latest).read().strip()
        state = torch.load(os.path.join(ckdir, name), map_location="cpu")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        start = state["step"]
        log(rank=rank, msg="resumed", ckpt=os.path.join(ckdir, name), step=start)
    model = DDP(model)
    g = torch.Generator().manual_seed(1000 + rank + start)
    t0 = time.time()
    for step in range(start + 1, MAX_STEPS + 1):
        seq = torch.randint(0, 21, (48, 256), generator=g)
        x = F.one_hot(seq, 21).float().transpose(1, 2)
        y = (seq[:, :8].sum(1) * 3) % 120
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log(rank=rank, step=step, loss=round(loss.item(), 4), ms_per_step=round((time.time() - t0) * 50, 1))
            t0 = time.time()
    log(rank=rank, msg="reached max_steps, final barrier before export", step=MAX_STEPS)
    dist.barrier()
    if rank == 0:
        torch.save(model.module.state_dict(), "family_cnn_final.pt")
        log(rank=rank, msg="exported family_cnn_final.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
