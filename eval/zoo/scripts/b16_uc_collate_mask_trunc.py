"""Support-ticket classifier (small transformer encoder), DDP over gloo, 2 ranks, 2 DataLoader workers per
rank; a padding collate_fn with truncation to MAX_LEN. Logging with asctime."""
import json
import logging
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

MAX_LEN = 128
log = logging.getLogger("tickets")


class Tickets(Dataset):
    def __init__(self, path):
        self.rows = [json.loads(line) for line in open(path)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        return torch.tensor(r["ids"]), r["label"]


def pad_collate(batch):
    ids = [b[0][:MAX_LEN] for b in batch]
    lens = [len(b[0]) for b in batch]
    width = max(len(x) for x in ids)
    input_ids = torch.zeros(len(batch), width, dtype=torch.long)
    mask = torch.zeros(len(batch), width, dtype=torch.bool)
    for i, (x, n) in enumerate(zip(ids, lens)):
        input_ids[i, : len(x)] = x
        mask[i, :n] = torch.ones(n, dtype=torch.bool)
    return input_ids, mask, torch.tensor([b[1] for b in batch])


class Encoder(nn.Module):
    def __init__(self, vocab=6000, d=64, n_cls=12):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 128, batch_first=True), 2)
        self.head = nn.Linear(d, n_cls)

    def forward(self, ids, mask):
        h = self.enc(self.emb(ids), src_key_padding_mask=~mask)
        return self.head((h * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s | rank {rank} | %(levelname)s | %(message)s")
    ds = Tickets("data/tickets.jsonl")
    sampler = DistributedSampler(ds, shuffle=True, seed=7)
    dl = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=2, collate_fn=pad_collate)
    model = DDP(Encoder())
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    log.info("%d tickets, %d batches per epoch", len(ds), len(dl))
    step = 0
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for ids, mask, y in dl:
            loss = nn.functional.cross_entropy(model(ids, mask), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 20 == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
        log.info("epoch %d done", epoch)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
