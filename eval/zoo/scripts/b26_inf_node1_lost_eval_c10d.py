"""Intent classifier (bag-of-words + MLP), DDP over gloo, one process per node; every 100 steps each rank scores its
share of the validation set and rank 0 gathers the predictions for the report."""
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

VOCAB, CLASSES = 20000, 40


def batches(rank, n, bs, seed):
    g = torch.Generator().manual_seed(seed * 100 + rank)
    for _ in range(n):
        x = torch.randint(0, VOCAB, (bs, 48), generator=g)
        yield x, x[:, 0] % CLASSES


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    node = int(os.environ["GROUP_RANK"])
    print(f"[node{node}] {socket.gethostname()} rank {rank}/{world} up", flush=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.EmbeddingBag(VOCAB, 128), nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, CLASSES)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step, (x, y) in enumerate(batches(rank, 400, 64, 1), 1):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[node{node}] step {step}/400 loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
        if step % 100 == 0:
            print(f"[node{node}] evaluating at step {step}", flush=True)
            model.eval()
            preds = []
            with torch.no_grad():
                for vx, vy in tqdm(batches(rank, 60, 256, 7), total=60, desc=f"eval node{node}", ncols=80):
                    preds += (model(vx).argmax(1) == vy).tolist()
                    time.sleep(0.02)
            gathered = [None] * world
            dist.all_gather_object(gathered, preds)
            if rank == 0:
                allp = [p for part in gathered for p in part]
                print(f"[node{node}] step {step} val_acc {sum(allp) / len(allp):.4f} ({len(allp)} examples)", flush=True)
            model.train()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
