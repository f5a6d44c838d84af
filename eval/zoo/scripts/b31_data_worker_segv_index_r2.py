"""Code-completion LM (GRU) on a memory-mapped token store: each rank reads its shard's records zero-copy (a raw
pointer read, as the C reader it replaced did) at (offset, length) from the shard's index; 2 DataLoader workers
per rank."""
import ctypes
import logging
import mmap

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

VOCAB, SEQ = 8000, 96
logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("codelm")


class TokenStore(Dataset):
    def __init__(self, path):
        self.path = path
        self.index = np.load(path + ".idx.npy")  # (byte offset, n_tokens) per record
        self.mm = None

    def __len__(self):
        return len(self.index)

    def _open(self):
        with open(self.path, "rb") as fh:
            self.mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
        self.base = ctypes.addressof(ctypes.c_char.from_buffer(self.mm))

    def __getitem__(self, i):
        if self.mm is None:
            self._open()
        off, n = (int(v) for v in self.index[i])
        raw = ctypes.string_at(self.base + off, 2 * min(n, SEQ + 1))
        toks = np.frombuffer(raw, dtype=np.uint16).astype(np.int64)
        return torch.from_numpy(np.pad(toks, (0, SEQ + 1 - len(toks))))


class CodeLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 128)
        self.rnn = nn.GRU(128, 128, batch_first=True)
        self.head = nn.Linear(128, VOCAB)

    def forward(self, x):
        return self.head(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ds = TokenStore(f"data/code-{rank:02d}.bin")
    loader = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2, generator=torch.Generator().manual_seed(rank))
    log.info("rank %d/%d: %d records in data/code-%02d.bin, %d batches/epoch", rank, world, len(ds), rank,
             len(loader))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(CodeLM())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(2):
        for x in loader:
            step += 1
            loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, VOCAB), x[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                log.info("rank %d epoch %d step %d loss %.4f", rank, epoch, step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
