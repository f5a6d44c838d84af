"""Support-ticket intent classifier (bag of token ids -> 3 labels), DDP over gloo under torchrun. The training set is
a directory of parquet parts exported by the data team; each rank reads every world-th part, one at a time."""
import glob
import time

import pyarrow.parquet as pq
import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

BATCH = 64


def batches(files):
    for path in files:
        table = pq.read_table(path)
        tokens = table.column("tokens").to_pylist()
        labels = torch.tensor(table.column("label").to_pylist())
        for i in range(0, len(tokens) - BATCH + 1, BATCH):
            chunk = tokens[i:i + BATCH]
            width = max(len(t) for t in chunk)
            ids = torch.tensor([t + [0] * (width - len(t)) for t in chunk])
            yield ids, labels[i:i + BATCH]


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    files = sorted(glob.glob("data/tickets/part-*.parquet"))[rank::world]
    print(f"[rank{rank}] {len(files)} parts: {', '.join(f.split('/')[-1] for f in files)}", flush=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.EmbeddingBag(20000, 128), nn.Linear(128, 3)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    bar = tqdm(total=len(files) * (4096 // BATCH), desc="train", disable=rank != 0, mininterval=0.5)
    t0, step = time.time(), 0
    for ids, y in batches(files):
        step += 1
        loss = nn.functional.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.update()
        if step % 40 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f} ({(time.time() - t0) / 40 * 1000:.1f} ms/step)",
                  flush=True)
            t0 = time.time()
    bar.close()
    dist.barrier()
    if rank == 0:
        torch.save(model.module.state_dict(), "intent.pt")
        print("saved intent.pt", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
