"""Tabular fraud model (MLP over 64 features), DDP over gloo under torch.multiprocessing.spawn (tcp://); every rank
logs logfmt lines with its own step time every 20 steps."""
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def run(rank, world, port):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 768), nn.ReLU(), nn.Linear(768, 768),
                                                              nn.ReLU(), nn.Linear(768, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    acc = 0.0
    for step in range(1, 701):
        t0 = time.time()
        x = torch.randn(384, 64, generator=g)
        y = (x[:, :4].sum(1) > 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        acc += time.time() - t0
        if step % 20 == 0:
            print(f"ts={time.strftime('%H:%M:%S')} rank={rank} step={step}/700 loss={loss.item():.4f} "
                  f"step_ms={acc / 20 * 1000:.1f}", flush=True)
            acc = 0.0
    print(f"ts={time.strftime('%H:%M:%S')} rank={rank} msg=\"training complete\"", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2, int(sys.argv[sys.argv.index("--port") + 1])), nprocs=2)
