"""Small GPT-style LM on pre-tokenized shards from the cluster's shared dataset volume (mounted at datasets/ on every
node); each rank takes every world_size-th shard."""
import datetime
import glob
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

SEQ = 64
VOCAB = 8192


class TinyLM(nn.Module):
    def __init__(self, d=128):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(SEQ, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d, VOCAB)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        h = self.emb(x) + self.pos(torch.arange(x.shape[1]))
        return self.head(self.blocks(h, mask=mask, is_causal=True))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    shards = sorted(glob.glob("datasets/wiki-tok/shard-*.npy"))
    if rank == 0:
        print(f"found {len(shards)} shards in datasets/wiki-tok, world size {world}", flush=True)
    tokens = np.concatenate([np.load(f) for f in shards[rank::world]])
    n = len(tokens) // (SEQ + 1)
    data = torch.from_numpy(tokens[: n * (SEQ + 1)].astype(np.int64)).view(n, SEQ + 1)
    torch.manual_seed(0)
    model = DDP(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for step in range(1, 501):
        batch = data[torch.randint(0, n, (8,), generator=g)]
        logits = model(batch[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 20 == 0:
            print(f"step {step} loss {loss.item():.3f} {(time.time() - t) * 50:.0f} ms/step", flush=True)
            t = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
