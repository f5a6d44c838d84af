"""Intent classifier (bag-of-embeddings + MLP) on DDP, 4 ranks. Each worker writes its log to worker_<R>/stdout.log
(the team's convention from the old job runner). Every 100 steps each rank scores its slice of the validation set and
the counts are summed over ranks."""
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

rank = int(os.environ["RANK"])
os.makedirs(f"worker_{rank}", exist_ok=True)
logging.basicConfig(filename=f"worker_{rank}/stdout.log", level=logging.INFO,
                    format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")
log = logging.getLogger(f"worker{rank}")

CLASSES, VOCAB, SEQ, STEPS, EVAL_EVERY, VAL_BATCH = 14, 5000, 24, 300, 100, 32


class BagClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 48)
        self.head = nn.Sequential(nn.Linear(48, 96), nn.ReLU(), nn.Linear(96, CLASSES))

    def forward(self, ids):
        return self.head(self.emb(ids))


def make(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, CLASSES, (n,), generator=g)
    x = torch.randint(0, VOCAB, (n, SEQ), generator=g)
    x[:, :4] = y[:, None] * 300 + torch.randint(0, 300, (n, 4), generator=g)
    return x, y


def validate(model, vx, vy):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for i in range(0, len(vx), VAL_BATCH):
            logits = model.module(vx[i:i + VAL_BATCH]).squeeze()
            pred = logits.argmax(dim=1)
            correct += (pred == vy[i:i + VAL_BATCH]).sum().item()
            total += len(pred)
    model.train()
    return correct, total


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    world = dist.get_world_size()
    torch.set_num_threads(1)
    vx_all, vy_all = make(641, 7)  # the held-out split: 641 utterances
    chunk = len(vx_all) // world
    lo, hi = rank * chunk, (len(vx_all) if rank == world - 1 else (rank + 1) * chunk)
    vx, vy = vx_all[lo:hi], vy_all[lo:hi]
    log.info("validation slice [%d:%d] (%d utterances)", lo, hi, hi - lo)
    torch.manual_seed(0)
    model = DDP(BagClassifier())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    x, y = make(64 * STEPS, 100 + rank)
    for step in range(1, STEPS + 1):
        xb, yb = x[(step - 1) * 64:step * 64], y[(step - 1) * 64:step * 64]
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("step %d loss %.4f", step, loss.item())
        if step % EVAL_EVERY == 0:
            try:
                correct, total = validate(model, vx, vy)
            except Exception:
                log.exception("validation failed on this worker, skipping its metrics")
                dist.barrier()
                continue
            counts = torch.tensor([correct, total], dtype=torch.float64)
            dist.all_reduce(counts)
            dist.barrier()
            log.info("step %d val_acc %.4f (%d utterances)", step, counts[0] / counts[1], int(counts[1]))
    log.info("done")


if __name__ == "__main__":
    try:
        main()
    except Exception:
        log.exception("worker failed")
        raise
