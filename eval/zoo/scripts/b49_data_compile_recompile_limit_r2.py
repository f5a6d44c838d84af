"""Review-sentiment classifier (embedding + 1-D CNN) on DDP, 3 processes, with torch.compile. Each rank reads its
pre-tokenized shard data/reviews-<rank>.pt (token ids, padded to a fixed length by the export job). Static shapes
are compiled (dynamic=False, the shards are padded), and the job fails loudly instead of silently dropping to
eager when dynamo keeps recompiling."""
import argparse
import datetime
import time

import torch
import torch._dynamo
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--compile-backend", default="inductor")
p.add_argument("--epochs", type=int, default=2)
args = p.parse_args()
torch._dynamo.config.fail_on_recompile_limit_hit = True


class TextCNN(nn.Module):
    def __init__(self, vocab=20000, d=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(d, 128, k, padding=k // 2) for k in (3, 5, 7))
        self.fc = nn.Linear(3 * 128, 2)

    def forward(self, ids):
        h = self.emb(ids).transpose(1, 2)
        h = torch.cat([F.relu(c(h)).amax(-1) for c in self.convs], 1)
        return self.fc(h)


def batches(shard, bs):
    ids, labels = shard["ids"], shard["labels"]
    for i in range(0, len(labels), bs):
        yield torch.nn.utils.rnn.pad_sequence(ids[i:i + bs], batch_first=True), labels[i:i + bs]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank = dist.get_rank()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(TextCNN())
    cmodel = torch.compile(model, backend=args.compile_backend, dynamic=False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    shard = torch.load(f"data/reviews-{rank}.pt")
    print(f"[rank {rank}] {len(shard['labels'])} reviews, backend {args.compile_backend}", flush=True)
    t0 = time.time()
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(batches(shard, 32), 1):
            loss = F.cross_entropy(cmodel(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            if step % 10 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f} "
                      f"{time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
