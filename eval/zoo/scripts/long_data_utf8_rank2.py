import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logger = logging.getLogger(__name__)
VOCAB = 4096
SEQ = 32


def stream_lines(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n")


def batches(path, bs):
    buf = []
    for line in stream_lines(path):
        ids = [hash(w) % VOCAB for w in line.split()][:SEQ]
        buf.append(ids + [0] * (SEQ - len(ids)))
        if len(buf) == bs:
            yield torch.tensor(buf)
            buf = []


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64)
        self.rnn = nn.GRU(64, 64, batch_first=True)
        self.out = nn.Linear(64, VOCAB)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    logging.basicConfig(format="%(asctime)s %(levelname)s [%(process)d] %(name)s - %(message)s", level=logging.INFO)
    path = f"corpus/shard_{rank:03d}.txt"
    logger.info("rank %d streaming %s", rank, path)
    model = DDP(TinyLM())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    t0 = time.time()
    for step, x in enumerate(batches(path, 8), 1):
        logits = model(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 2 == 0:
            logger.info("step %d loss %.4f tokens/s %.0f", step, loss.item(), 2 * 8 * SEQ / (time.time() - t0))
            t0 = time.time()
    logger.info("rank %d finished its shard", rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
