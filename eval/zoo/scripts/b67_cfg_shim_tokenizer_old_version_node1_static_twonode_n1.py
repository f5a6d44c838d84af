"""Token-classification (NER) tagger trained with DDP on two nodes x 2 processes (torchrun, static rendezvous).
The sub-word tokenizer is the team's `subword_lite` package, installed into the site directory that every node's
environment puts on PYTHONPATH; the script needs >= 2.0 (the byte-fallback vocabulary)."""
import datetime
import os
import time

import subword_lite
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

MIN_SUBWORD = (2, 0)


def check_versions():
    found = tuple(int(x) for x in subword_lite.__version__.split(".")[:2])
    if found < MIN_SUBWORD:
        raise ImportError(
            f"subword_lite>={'.'.join(map(str, MIN_SUBWORD))} is required for a normal functioning of this script, "
            f"but found subword_lite=={subword_lite.__version__} ({subword_lite.__file__}).")


class Tagger(nn.Module):
    def __init__(self, vocab, n_tags=9, dim=96):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * dim, n_tags)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    print(f"[rank {rank}] host node{os.environ['GROUP_RANK']} subword_lite {subword_lite.__version__}", flush=True)
    check_versions()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    tok = subword_lite.Tokenizer()
    torch.manual_seed(0)
    model = DDP(Tagger(tok.vocab_size))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 121):
        x = torch.randint(0, tok.vocab_size, (32, 40), generator=g)
        y = x % 9
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank {rank}] step {step}/120 loss {loss.item():.4f} {(time.time() - t0) / step:.3f}s/step",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
