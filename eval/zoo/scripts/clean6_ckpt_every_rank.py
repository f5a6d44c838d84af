"""Word-window language model (embedding + MLP) with DDP; every rank logs, rank 0 checkpoints every 200 steps."""
import gzip
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, CTX, STEPS, SAVE_EVERY, LOG_EVERY = 8000, 8, 600, 150, 20


class WindowLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 128)
        self.mlp = nn.Sequential(nn.Linear(128 * CTX, 512), nn.GELU(), nn.Linear(512, VOCAB))

    def forward(self, x):
        return self.mlp(self.emb(x).flatten(1))


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(WindowLM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(1234 + rank)
    corpus = torch.randint(0, VOCAB, (200_000,), generator=g)
    os.makedirs("checkpoints", exist_ok=True)
    t_start = t = time.time()
    for step in range(1, STEPS + 1):
        idx = torch.randint(0, len(corpus) - CTX - 1, (24,), generator=g)
        x = torch.stack([corpus[i:i + CTX] for i in idx])
        y = corpus[idx + CTX]
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % LOG_EVERY == 0:
            print(f"[rank{rank}] step {step}/{STEPS} loss {loss.item():.4f} | {(time.time() - t) / LOG_EVERY * 1000:.1f} ms/step")
            t = time.time()
        if step % SAVE_EVERY == 0:
            if rank == 0:
                path = f"checkpoints/step_{step:06d}.pt.gz"
                print(f"[rank0] saving checkpoint to {path}")
                ts = time.time()
                # compressed (the quota on the shared volume is small); written to a temp name, then renamed
                with gzip.open(path + ".tmp", "wb", compresslevel=1) as f:
                    torch.save({"step": step, "model": model.module.state_dict()}, f)
                os.replace(path + ".tmp", path)
                print(f"[rank0] checkpoint saved ({os.path.getsize(path) / 2**20:.1f} MB, {time.time() - ts:.2f}s)")
            dist.barrier()
    dist.barrier()
    if rank == 0:
        print(f"[rank0] training done: {STEPS} steps in {time.time() - t_start:.1f}s, final loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
