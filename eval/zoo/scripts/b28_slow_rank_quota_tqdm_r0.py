"""Audio-event tagger (a small 1-D CNN on log-mel frames), DDP over gloo, 2 ranks; rank 0 draws a tqdm bar,
every rank writes a line every 100 steps."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

STEPS = 1000


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(), nn.Conv1d(64, 64, 5, padding=2), nn.ReLU(),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 50)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    bar = tqdm(total=STEPS, desc="train", disable=rank != 0, mininterval=0.5)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(16, 40, 100, generator=g)
        y = torch.randint(0, 2, (16, 50), generator=g).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
        if step % 100 == 0:
            tqdm.write(f"rank {rank} | step {step} | loss {loss.item():.4f} | {(time.time() - t0) * 10:.1f} ms/step")
            t0 = time.time()
    bar.close()
    dist.barrier()
    if rank == 0:
        print("all steps done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
