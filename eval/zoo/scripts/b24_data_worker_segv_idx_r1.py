"""GPT-style language model pre-training on a pre-tokenized corpus (Megatron-style .bin token file + .idx of document
offsets/lengths, one pair per rank), read zero-copy from the memory map in 2 DataLoader workers; DDP over gloo; tqdm bar
on rank 0."""
import ctypes
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

SEQ = 64


class IndexedTokens(torch.utils.data.Dataset):
    def __init__(self, prefix):
        self.idx = np.load(prefix + ".idx.npy")  # (n_docs, 2): token offset, length
        self.bin = np.memmap(prefix + ".bin", dtype=np.uint16, mode="r")

    def __len__(self):
        return len(self.idx)

    def __getitem__(self, i):
        off, n = (int(v) for v in self.idx[i])
        n = min(n, SEQ + 1)
        raw = ctypes.string_at(self.bin.ctypes.data + 2 * off, 2 * n)  # zero-copy view of the document
        ids = np.frombuffer(raw, dtype=np.uint16).astype(np.int64)
        ids = np.pad(ids, (0, SEQ + 1 - len(ids)))
        return torch.from_numpy(ids[:-1]), torch.from_numpy(ids[1:])


class TinyLM(nn.Module):
    def __init__(self, vocab=4000, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.block = nn.TransformerEncoderLayer(d, 4, 128, batch_first=True)
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        return self.head(self.block(self.emb(x)))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    ds = IndexedTokens(f"corpus/web-en-{rank:02d}")
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, num_workers=2,
                                         generator=torch.Generator().manual_seed(rank))
    model = nn.parallel.DistributedDataParallel(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for epoch in range(2):
        bar = tqdm(loader, desc=f"epoch {epoch}", disable=rank != 0)
        for x, y in bar:
            loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
    if rank == 0:
        print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
