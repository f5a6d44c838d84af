"""Per-rank feature shards on the shared filesystem; each epoch re-opens its shard (memory-mapped) and
checkpoints at epoch end so that torchrun --max-restarts can resume."""
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT = "checkpoints/latest.pt"
EPOCHS = 5
BATCH = 64


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(40, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1)))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    start_epoch = 0
    if os.path.exists(CKPT):
        st = torch.load(CKPT)
        model.module.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        start_epoch = st["epoch"] + 1
        print(f"[rank{rank}] restart {restart}: resuming at epoch {start_epoch}", flush=True)
    for epoch in range(start_epoch, EPOCHS):
        feats = np.load(f"/mnt/shared/features/part-{rank:03d}.npy", mmap_mode="r")
        t0 = time.time()
        for step in range(len(feats) // BATCH):
            chunk = torch.from_numpy(np.array(feats[step * BATCH:(step + 1) * BATCH]))
            x, y = chunk[:, :40], chunk[:, 40:]
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                print(f"[rank{rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        print(f"[rank{rank}] epoch {epoch} done in {time.time() - t0:.1f}s", flush=True)
        if rank == 0:
            os.makedirs("checkpoints", exist_ok=True)
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, CKPT + ".tmp")
            os.replace(CKPT + ".tmp", CKPT)
        dist.barrier()
    if rank == 0:
        print("training finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
