"""Domain classifier over forum posts, small Transformer encoder, DDP. Batches are padded to their longest post.

The corpus export (data/corpus.jsonl) is documented as pre-shuffled, so the sampler does not shuffle again (keeps the
order reproducible between runs).
"""
import json
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)s | %(name)s | %(message)s")
log = logging.getLogger("domain-cls")


class Posts(Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.rows = [json.loads(line) for line in f]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return torch.tensor(self.rows[i]["ids"]), self.rows[i]["domain"]


def collate(batch):
    ids, y = zip(*batch)
    x = nn.utils.rnn.pad_sequence(ids, batch_first=True)
    return x, x == 0, torch.tensor(y)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6000, 128, padding_idx=0)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(128, 4, 256, batch_first=True), 2)
        self.out = nn.Linear(128, 8)

    def forward(self, x, pad):
        h = self.enc(self.emb(x), src_key_padding_mask=pad)
        return self.out(h.masked_fill(pad[..., None], 0).sum(1) / (~pad).sum(1, keepdim=True))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = Posts("data/corpus.jsonl")
    sampler = DistributedSampler(ds, shuffle=False)
    loader = DataLoader(ds, batch_size=16, sampler=sampler, collate_fn=collate)
    model = DDP(Encoder())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    if rank == 0:
        log.info(f"{len(ds)} posts, {len(loader)} steps per rank")
    t0 = time.time()
    for step, (x, pad, y) in enumerate(loader, 1):
        loss = nn.functional.cross_entropy(model(x, pad), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 and rank == 0:
            log.info(f"step {step}/{len(loader)} | loss {loss.item():.4f} | {1000 * (time.time() - t0) / 20:.1f} ms/step")
            t0 = time.time()
    if rank == 0:
        log.info("done")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
