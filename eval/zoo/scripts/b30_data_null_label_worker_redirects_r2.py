"""Support-ticket topic classifier (embedding bag), DDP over gloo, 3 ranks; each rank reads its own export
(data/tickets-<rank>.jsonl) through a DataLoader with 2 workers and a collate_fn that pads the token lists."""
import json

import torch
import torch.distributed as dist
import torch.nn as nn


class Tickets(torch.utils.data.Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.rows = [json.loads(line) for line in f]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


def collate(batch):
    width = max(len(b["tokens"]) for b in batch)
    ids = torch.zeros(len(batch), width, dtype=torch.long)
    for i, b in enumerate(batch):
        ids[i, : len(b["tokens"])] = torch.tensor(b["tokens"])
    labels = torch.tensor([b["label"] for b in batch])
    return ids, labels


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = Tickets(f"data/tickets-{rank}.jsonl")
    loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=2, collate_fn=collate)
    print(f"rank {rank}: {len(ds)} tickets, {len(loader)} batches", flush=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.EmbeddingBag(20000, 96, padding_idx=0),
                                                              nn.Linear(96, 24)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        for step, (ids, y) in enumerate(loader, 1):
            loss = nn.functional.cross_entropy(model(ids), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                print(f"rank {rank}: epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
