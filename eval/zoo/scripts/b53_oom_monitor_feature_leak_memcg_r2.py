"""Click model for the ranking service, 3 ranks, DDP on gloo. The last rank also runs the model monitor: it keeps a
rolling window of the model's recent scores and penultimate-layer features to report the expected calibration error
and the feature drift every 50 steps."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class ModelMonitor:
    def __init__(self, window=20):
        self.window = window
        self.scores, self.labels, self.feats = [], [], []
        self.ref = None

    def update(self, logits, labels, feats):
        self.scores.append(torch.sigmoid(logits.detach()))
        self.labels.append(labels)
        self.feats.append(feats)
        if len(self.scores) > self.window:
            self.scores.pop(0)
            self.labels.pop(0)

    def drift(self):
        mean = torch.cat(self.feats[-self.window:]).mean(0)
        if self.ref is None:
            self.ref = mean
        return float((mean - self.ref).norm() / (self.ref.norm() + 1e-6))

    def ece(self, bins=10):
        p = torch.cat(self.scores).detach()
        y = torch.cat(self.labels)
        idx = (p * bins).long().clamp(max=bins - 1)
        err = 0.0
        for b in range(bins):
            m = idx == b
            if m.any():
                err += m.float().mean() * (p[m].mean() - y[m].mean()).abs()
        return float(err)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    monitor = ModelMonitor() if rank == world - 1 else None
    feats = {}
    model[3].register_forward_hook(lambda mod, inp, out: feats.__setitem__("h", out))
    g = torch.Generator().manual_seed(rank)
    w_true = torch.randn(128, generator=torch.Generator().manual_seed(7))
    t_last = time.time()
    for step in range(1, 601):
        x = torch.randn(512, 128, generator=g)
        y = (x @ w_true > 0).float()
        logits = ddp(x).squeeze(1)
        loss = F.binary_cross_entropy_with_logits(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if monitor is not None:
            monitor.update(logits, y, feats["h"])
        if step % 10 == 0:
            now = time.time()
            msg = f"[rank{rank}] step {step}/600 loss {loss.item():.4f} {1000 * (now - t_last) / 10:.0f} ms/step"
            if monitor is not None and step % 50 == 0:
                msg += f" ece {monitor.ece():.4f} drift {monitor.drift():.4f}"
            print(msg, flush=True)
            t_last = now
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
