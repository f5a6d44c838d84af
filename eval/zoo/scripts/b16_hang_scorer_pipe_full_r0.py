"""Named-entity tagger (BiLSTM), DDP over gloo, 3 ranks. After every epoch rank 0 exports the dev-set
predictions and scores them with the team's conlleval-style script (tools/score_ner.py) in a subprocess."""
import subprocess
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Tagger(nn.Module):
    def __init__(self, vocab=5000, n_tags=9):
        super().__init__()
        self.emb = nn.Embedding(vocab, 64)
        self.lstm = nn.LSTM(64, 64, batch_first=True, bidirectional=True)
        self.out = nn.Linear(128, n_tags)

    def forward(self, x):
        return self.out(self.lstm(self.emb(x))[0])


def score_dev(model, epoch):
    x = torch.randint(0, 5000, (400, 30), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        pred = model(x).argmax(-1)
    with open(f"dev_pred_epoch{epoch}.txt", "w") as f:
        for i, row in enumerate(pred.tolist()):
            for j, t in enumerate(row):
                f.write(f"tok{x[i, j].item()} O T{t}\n")
            f.write("\n")
    proc = subprocess.Popen([sys.executable, "tools/score_ner.py", f"dev_pred_epoch{epoch}.txt"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.wait()
    report = proc.stdout.read()
    return report.strip().splitlines()[-1]


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(Tagger())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(4):
        t0 = time.time()
        for it in range(1, 61):
            x = torch.randint(0, 5000, (32, 30), generator=g)
            y = x % 9
            loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
            if it % 20 == 0:
                print(f"rank {rank}/{world} epoch {epoch} it {it}/60 loss {loss.item():.4f}", flush=True)
        print(f"rank {rank}/{world} epoch {epoch} finished in {time.time() - t0:.1f}s", flush=True)
        if rank == 0:
            print(f"rank 0/{world} epoch {epoch} dev: {score_dev(model.module, epoch)}", flush=True)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
