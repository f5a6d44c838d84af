"""Tabular churn model, DDP over gloo under python -m torch.distributed.run. Every rank saves its own checkpoint file
(model, optimizer, its RNG state and its position in the data) so that a resumed run continues bit-for-bit;
--resume DIR loads ckpt/<step>/rank<R>.pt."""
import argparse
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
log = logging.getLogger("churn")


def build():
    return nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--resume", default="")
    ap.add_argument("--steps", type=int, default=6000)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = build()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator()
    start = 0
    if args.resume:
        path = os.path.join(args.resume, f"rank{rank}.pt")
        log.info("rank %d: resuming from %s", rank, path)
        state = torch.load(path)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        g.set_state(state["rng"])
        start = state["step"]
    else:
        g.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(model)
    log.info("rank %d: starting at step %d", rank, start)
    for step in range(start + 1, args.steps + 1):
        x = torch.randn(128, 128, generator=g)
        y = torch.randint(0, 2, (128,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            log.info("rank %d: step %d loss %.4f", rank, step, loss.item())
        if step % 1000 == 0:
            d = f"ckpt/step_{step}"
            os.makedirs(d, exist_ok=True)
            torch.save({"model": model.module.state_dict(), "optim": opt.state_dict(), "rng": g.get_state(),
                        "step": step}, os.path.join(d, f"rank{rank}.pt"))
            log.info("rank %d: saved %s/rank%d.pt", rank, d, rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
