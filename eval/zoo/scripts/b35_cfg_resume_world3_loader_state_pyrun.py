"""Conformer-lite ASR acoustic model (CTC), DDP over gloo; checkpoints every --save-every steps to ckpt/step_N/ with
the model, the optimizer and each rank's data-loader position (so a resumed run continues each rank's stream where
it stopped); python logging with asctime and the rank."""
import argparse
import json
import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class ShardStream:
    """Each rank's stream of utterances: a seeded generator plus how many batches it has handed out."""

    def __init__(self, rank, batch=16):
        self.rank, self.batch, self.position = rank, batch, 0

    def state_dict(self):
        return {"position": self.position}

    def load_state_dict(self, sd):
        self.position = sd["position"]

    def next(self):
        g = torch.Generator().manual_seed(1000 * self.rank + self.position)
        self.position += 1
        x = torch.randn(self.batch, 80, 120, generator=g)
        y = torch.randint(1, 32, (self.batch, 20), generator=g)
        return x, y


class Acoustic(nn.Module):
    def __init__(self, d=144, vocab=32):
        super().__init__()
        self.sub = nn.Sequential(nn.Conv1d(80, d, 3, stride=2, padding=1), nn.SiLU())
        layer = nn.TransformerEncoderLayer(d, 4, 2 * d, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        return self.out(self.enc(self.sub(x).transpose(1, 2)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--save-every", type=int, default=200)
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
    log = logging.getLogger("asr")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Acoustic())
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    stream = ShardStream(rank)
    start = 0
    if args.resume:
        meta = json.load(open(os.path.join(args.resume, "meta.json")))
        model.module.load_state_dict(torch.load(os.path.join(args.resume, "model.pt")))
        opt.load_state_dict(torch.load(os.path.join(args.resume, "optim.pt")))
        stream.load_state_dict(torch.load(os.path.join(args.resume, f"loader_rank{rank}.pt")))
        start = meta["step"]
        log.info("resumed from %s at step %d", args.resume, start)
    for step in range(start + 1, args.steps + 1):
        x, y = stream.next()
        logp = F.log_softmax(model(x), -1).transpose(0, 1)
        loss = F.ctc_loss(logp, y, torch.full((len(y),), logp.shape[0]), torch.full((len(y),), 20))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("step %d/%d ctc %.4f", step, args.steps, loss.item())
        if step % args.save_every == 0:
            d = f"ckpt/step_{step}"
            os.makedirs(d, exist_ok=True)
            torch.save(stream.state_dict(), f"{d}/loader_rank{rank}.pt")
            if rank == 0:
                torch.save(model.module.state_dict(), f"{d}/model.pt")
                torch.save(opt.state_dict(), f"{d}/optim.pt")
                json.dump({"step": step, "world_size": world}, open(f"{d}/meta.json", "w"))
                log.info("saved %s", d)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
