"""Continued pretraining of the 4-layer encoder from last week's export, 4 ranks on one node (DDP, gloo). Every rank
builds the model and loads the exported full state dict (weights + Adam moments) before wrapping it in DDP."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def build():
    return nn.Sequential(nn.Embedding(16000, 512), nn.Flatten(0, 1),
                         *[m for _ in range(4) for m in (nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512))],
                         nn.Linear(512, 16000))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = build()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    t0 = time.time()
    ckpt = torch.load("export/encoder-step48000.pt", map_location="cpu")
    print(f"rank {rank}: loaded export/encoder-step48000.pt in {time.time() - t0:.1f}s "
          f"(step {ckpt['step']}, {os.path.getsize('export/encoder-step48000.pt') >> 20} MiB)", flush=True)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optim"])
    start = ckpt["step"]
    del ckpt
    ddp = nn.parallel.DistributedDataParallel(model)
    g = torch.Generator().manual_seed(rank)
    for step in range(start + 1, start + 41):
        tok = torch.randint(0, 16000, (8, 64), generator=g)
        logits = ddp(tok)
        loss = F.cross_entropy(logits, tok.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"rank {rank}: step {step} loss {loss.item():.3f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
