"""Intent classifier on 3 ranks (DDP, gloo): a frozen pretrained token embedding (32k x 384) under a small trainable
encoder, with asynchronous checkpoints: rank 0 hands a CPU copy of the model and optimizer state to a writer process
every 15 steps and goes on training; before handing over the next one it waits for the writer's acknowledgement of the
previous save, so that two saves never overlap."""
import datetime
import io
import multiprocessing as mp
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def writer(jobs, acks):
    while True:
        job = jobs.get()
        if job is None:
            return
        step, state = job
        buf = io.BytesIO()
        torch.save(state, buf)  # serialise in memory, then one write: the file is never half-written
        tmp = f"ckpt/step{step:06d}.pt.tmp"
        with open(tmp, "wb") as f:
            f.write(buf.getbuffer())
        os.replace(tmp, f"ckpt/step{step:06d}.pt")
        acks.put(step)


class IntentModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(32000, 384)
        self.emb.weight.requires_grad_(False)  # pretrained, frozen
        self.enc = nn.Sequential(nn.Linear(384, 256), nn.GELU(), nn.Linear(256, 256))
        self.head = nn.Linear(256, 24)

    def forward(self, tok):
        return self.head(self.enc(self.emb(tok)).mean(1))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        ctx = mp.get_context("fork")
        jobs, acks = ctx.Queue(), ctx.Queue()
        proc = ctx.Process(target=writer, args=(jobs, acks), daemon=True)
        proc.start()
        pending = None
    model = IntentModel()
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW([p for p in ddp.parameters() if p.requires_grad], lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    t_last = time.time()
    for step in range(1, 121):
        tok = torch.randint(0, 32000, (64, 24), generator=g)
        y = tok[:, 0] % 24
        loss = F.cross_entropy(ddp(tok), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.1)  # the real loader's pace
        if step % 5 == 0:
            now = time.time()
            print(f"rank={rank} step={step} loss={loss.item():.3f} step_ms={(now - t_last) * 200:.0f}", flush=True)
            t_last = now
        if rank == 0 and step % 15 == 0:
            if pending is not None:
                t0 = time.time()
                done = acks.get()  # the previous save must be on disk before the next one starts
                print(f"rank=0 checkpoint step {done} written (waited {time.time() - t0:.1f}s)", flush=True)
            state = {"step": step, "model": {k: v.clone() for k, v in model.state_dict().items()},
                     "optim": opt.state_dict()}
            jobs.put((step, state))
            pending = step
            print(f"rank=0 checkpoint step {step} handed to the writer (pid {proc.pid})", flush=True)
    if rank == 0:
        acks.get()
        jobs.put(None)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
