"""Small causal LM pre-training on the web crawl, DDP over gloo, one process per node; each node packs 128-token
blocks from the crawl parts on its local disk, upsampling every part to the same number of English documents."""
import datetime
import itertools
import json
import logging
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="[%(asctime)s] %(levelname)s %(name)s: %(message)s", level=logging.INFO,
                    stream=sys.stdout)
log = logging.getLogger("lm")
BLOCK, DOCS_PER_PART = 128, 200


def blocks(node):
    buf = []
    for part in sorted(os.listdir(f"data/node{node}")):
        with open(f"data/node{node}/{part}") as f:
            rows = [json.loads(line) for line in f]
        english = (r for r in itertools.cycle(rows) if r["lang"] == "en")
        for doc in itertools.islice(english, DOCS_PER_PART):
            buf.extend(doc["ids"])
            while len(buf) >= 8 * BLOCK:
                yield torch.tensor(buf[: 8 * BLOCK]).view(8, BLOCK)
                buf = buf[8 * BLOCK:]


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(4000, 128)
        self.rnn = nn.GRU(128, 128, batch_first=True)
        self.out = nn.Linear(128, 4000)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, node = dist.get_rank(), int(os.environ["GROUP_RANK"])
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(LM())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    log.info("node %d rank %d: parts %s", node, rank, sorted(os.listdir(f"data/node{node}")))
    for step, x in enumerate(blocks(node), 1):
        logits = model(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 4000), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("node %d rank %d: step %d loss %.3f", node, rank, step, loss.item())
    log.info("node %d rank %d: finished", node, rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
