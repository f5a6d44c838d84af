"""Character-level LM (2-layer GRU) on DDP, 3 ranks, launched with torchrun --log-dir. Each rank reads its own
token shard (tokens/shard-R.pt) and a background thread cuts it into (batch, context+1) blocks ahead of the
training loop, so that the loop never waits on slicing."""
import datetime
import logging
import os
import queue
import sys
import threading

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

BATCH, CTX, VOCAB, STEPS = 16, 64, 96, 260
logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                    format="%(asctime)s %(levelname)s [%(name)s] rank=" + os.environ.get("RANK", "?") + " %(message)s")
log = logging.getLogger("charlm")


class Prefetcher:
    """Cuts the shard into blocks of BATCH x (CTX+1) tokens on a background thread, epoch after epoch."""

    def __init__(self, tokens, depth=8):
        self.tokens, self.q = tokens, queue.Queue(maxsize=depth)
        self.thread = threading.Thread(target=self._fill, name="prefetch", daemon=True)
        self.thread.start()

    def _fill(self):
        block = BATCH * (CTX + 1)
        while True:
            for start in range(0, len(self.tokens), block):
                self.q.put(self.tokens[start:start + block].view(BATCH, CTX + 1))

    def next(self):
        return self.q.get()


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64)
        self.rnn = nn.GRU(64, 128, num_layers=2, batch_first=True)
        self.out = nn.Linear(128, VOCAB)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


@record
def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank = dist.get_rank()
    torch.set_num_threads(1)
    tokens = torch.load(f"tokens/shard-{rank}.pt")
    log.info("shard tokens/shard-%d.pt: %d tokens", rank, len(tokens))
    torch.manual_seed(0)
    model = DDP(CharLM())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    data = Prefetcher(tokens)
    for step in range(1, STEPS + 1):
        blk = data.next()
        x, y = blk[:, :-1], blk[:, 1:]
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"rank {rank} step {step}/{STEPS} loss {loss.item():.4f}", flush=True)
    log.info("training done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
