"""Sequence tagger (BiGRU + CRF-free softmax) for shipment-event extraction, DDP over gloo, one process per node
(CPU nodes); written for torchrun, which sets RANK / LOCAL_RANK / WORLD_SIZE."""
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

LOCAL_RANK = int(os.environ["LOCAL_RANK"])
RANK = int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s %(levelname)s [rank {RANK}] %(message)s", level=logging.INFO)
log = logging.getLogger("tagger")
VOCAB, TAGS = 12000, 17


class Tagger(nn.Module):
    def __init__(self, d=128):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.rnn = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * d, TAGS)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    log.info("process group ready: world size %d, local rank %d", dist.get_world_size(), LOCAL_RANK)
    model = DDP(Tagger())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(RANK)
    for step in range(1, 601):
        x = torch.randint(0, VOCAB, (32, 48), generator=g)
        y = torch.randint(0, TAGS, (32, 48), generator=g)
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d/600 loss %.4f", step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
