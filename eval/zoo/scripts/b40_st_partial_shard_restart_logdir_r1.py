"""Speech-command classifier (log-mel frames -> 35 keywords), DDP over gloo. Every 100 steps each rank writes its
own resumable state (model, optimizer, its data cursor and RNG) to ckpt/step_NNNNNN/rank{R}.pt; on start the
newest step directory is resumed. Launched with torchrun --max-restarts 1 so that a crashed attempt picks up where
it left off."""
import glob
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

TOTAL_STEPS = 400
SAVE_EVERY = 100


class KWS(nn.Module):
    def __init__(self, n_mels=40, frames=98, n_cls=35):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(n_mels, 128, 5, padding=2), nn.ReLU(),
                                  nn.Conv1d(128, 128, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(8))
        self.fc = nn.Sequential(nn.Linear(128 * 8, 1024), nn.ReLU(), nn.Linear(1024, 512), nn.ReLU(),
                                nn.Linear(512, n_cls))

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


def latest_step_dir():
    dirs = sorted(glob.glob("ckpt/step_*"))
    return dirs[-1] if dirs else None


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    data = torch.load(f"data/mels_{rank}.pt")
    x, y = data["x"], data["y"]
    torch.manual_seed(1234)
    model = KWS()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    start, cursor = 0, 0
    resume = latest_step_dir()
    if resume:
        print(f"[rank{rank}] attempt {restart}: resuming from {resume}/rank{rank}.pt", flush=True)
        state = torch.load(f"{resume}/rank{rank}.pt", map_location="cpu")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        start, cursor = state["step"], state["cursor"]
        torch.set_rng_state(state["rng"])
    else:
        print(f"[rank{rank}] attempt {restart}: no checkpoint, starting fresh ({len(y)} clips)", flush=True)
    model = DDP(model)
    t0 = time.time()
    for step in range(start + 1, TOTAL_STEPS + 1):
        idx = torch.arange(cursor, cursor + 32) % len(y)
        cursor = (cursor + 32) % len(y)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank{rank}] step {step}/{TOTAL_STEPS} loss {loss.item():.4f} "
                  f"{(time.time() - t0) * 1000 / 20:.0f} ms/step", flush=True)
            t0 = time.time()
        if step % SAVE_EVERY == 0:
            d = f"ckpt/step_{step:06d}"
            os.makedirs(d, exist_ok=True)
            torch.save({"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step,
                        "cursor": cursor, "rng": torch.get_rng_state()}, f"{d}/rank{rank}.pt")
            print(f"[rank{rank}] saved {d}/rank{rank}.pt", flush=True)
            dist.barrier()
    print(f"[rank{rank}] done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
