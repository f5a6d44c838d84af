"""Intent classifier for support tickets (bag-of-words embedding + MLP) trained with FSDP2 on 3 processes. Each rank
reads its own shard of the ticket dump (data/tickets-<rank>.txt, 'label<TAB>text' per line) and builds the word
vocabulary while reading it."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

MAX_WORDS = 24


class Intent(nn.Module):
    def __init__(self, vocab_size, n_labels, d=128):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab_size, d, mode="mean", padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, n_labels))

    def forward(self, ids):
        return self.mlp(self.emb(ids))


def load_shard(path):
    vocab = {"<pad>": 0, "<unk>": 1}
    rows, labels = [], []
    for line in open(path):
        label, text = line.rstrip("\n").split("\t")
        ids = []
        for w in text.lower().split()[:MAX_WORDS]:
            if w not in vocab:
                vocab[w] = len(vocab)
            ids.append(vocab[w])
        rows.append(ids + [0] * (MAX_WORDS - len(ids)))
        labels.append(int(label))
    return vocab, torch.tensor(rows), torch.tensor(labels)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    vocab, x, y = load_shard(f"data/tickets-{rank}.txt")
    print(f"rank {rank}: {len(y)} tickets, vocab {len(vocab)} words", flush=True)
    torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (world,))
    model = Intent(len(vocab), n_labels=8)
    fully_shard(model.emb, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for epoch in range(3):
        perm = torch.randperm(len(y), generator=g)
        for i in range(0, len(y) - 63, 64):
            b = perm[i:i + 64]
            loss = F.cross_entropy(model(x[b]), y[b])
            loss.backward()
            opt.step()
            opt.zero_grad()
        print(f"rank {rank}: epoch {epoch} loss {loss.item():.4f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
