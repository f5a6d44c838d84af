"""Click-through model on parquet feature parts, DDP over gloo; each rank streams its own parts row group by row group
(pyarrow) and logs its own data-wait and step times every 25 steps."""
import glob
import time

import numpy as np
import pyarrow.parquet as pq
import torch
import torch.distributed as dist
import torch.nn as nn


def batches(files, bs):
    buf = []
    for f in files:
        pf = pq.ParquetFile(f)
        for rg in range(pf.num_row_groups):
            t = pf.read_row_group(rg, columns=["features", "clicked"])
            x = np.stack(t.column("features").to_numpy(zero_copy_only=False))
            y = t.column("clicked").to_numpy()
            buf.extend(zip(x, y))
            while len(buf) >= bs:
                chunk, buf = buf[:bs], buf[bs:]
                yield (torch.tensor(np.stack([c[0] for c in chunk]), dtype=torch.float32),
                       torch.tensor([c[1] for c in chunk], dtype=torch.float32))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    files = sorted(glob.glob(f"data/ctr/rank{rank}/part-*.parquet"))
    print(f"[{rank}] {len(files)} parquet parts", flush=True)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512),
                                                              nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    it = batches(files, 512)
    data_ms = step_ms = 0.0
    for step in range(1, 501):
        t0 = time.time()
        x, y = next(it)
        t1 = time.time()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        data_ms += (t1 - t0) * 1000
        step_ms += (time.time() - t0) * 1000
        if step % 25 == 0:
            print(f"[{rank}] it {step:4d}/500 | loss {loss.item():.4f} | data {data_ms / 25:6.1f} ms"
                  f" | step {step_ms / 25:6.1f} ms", flush=True)
            data_ms = step_ms = 0.0
    dist.barrier()
    print(f"[{rank}] done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
