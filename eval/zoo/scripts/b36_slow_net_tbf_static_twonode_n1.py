"""Speech-enhancement mask estimator (2-layer BiLSTM over spectrogram frames), DDP over gloo, one process per node
(torchrun static rendezvous); asctime logging with node and rank; a timing line every 20 steps."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class MaskNet(nn.Module):
    def __init__(self, bins=129, hidden=96):
        super().__init__()
        self.lstm = nn.LSTM(bins, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, bins)

    def forward(self, x):
        h, _ = self.lstm(x)
        return torch.sigmoid(self.out(h))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    node = os.environ.get("GROUP_RANK", "?")
    logging.basicConfig(format=f"%(asctime)s node{node} rank{rank} %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("enh")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(MaskNet(), bucket_cap_mb=1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    steps = 400
    log.info(f"{sum(p.numel() for p in model.parameters())} parameters, {steps} steps")
    t0 = time.time()
    for step in range(1, steps + 1):
        noisy = torch.rand(8, 20, 129, generator=g)
        clean = noisy * torch.rand(8, 20, 129, generator=g)
        loss = F.mse_loss(model(noisy) * noisy, clean)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info(f"step {step}/{steps} loss {loss.item():.5f} {(time.time() - t0) / 20 * 1000:.1f} ms/step")
            t0 = time.time()
    dist.barrier()
    log.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
