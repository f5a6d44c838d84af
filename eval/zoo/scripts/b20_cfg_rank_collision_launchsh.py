"""CTC acoustic model (conv + GRU) on log-mel frames, DDP over gloo, started by the team's launch.sh (one process per
socket, env:// initialisation from RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT)."""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--batch-size", type=int, default=16)
args = p.parse_args()


class CTCModel(nn.Module):
    def __init__(self, n_mels=40, hidden=128, n_tokens=32):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(n_mels, hidden, 5, stride=2, padding=2), nn.ReLU())
        self.gru = nn.GRU(hidden, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, n_tokens)

    def forward(self, x):
        h = self.conv(x.transpose(1, 2)).transpose(1, 2)
        return self.out(self.gru(h)[0]).log_softmax(-1)


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    print(f"[{time.strftime('%H:%M:%S')}] rank {rank}/{world} on {os.uname().nodename} (cpu slot {local_rank}), "
          f"rendezvous {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    model = DDP(CTCModel())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(args.epochs):
        for it in range(100):
            x = torch.randn(args.batch_size, 200, 40, generator=g)
            tgt = torch.randint(1, 32, (args.batch_size, 30), generator=g)
            lp = model(x).transpose(0, 1)
            loss = ctc(lp, tgt, torch.full((args.batch_size,), lp.size(0)), torch.full((args.batch_size,), 30))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and it % 25 == 0:
                print(f"[{time.strftime('%H:%M:%S')}] epoch {epoch} it {it} ctc {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
