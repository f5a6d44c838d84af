"""Audio event tagger (MLP over pooled log-mel features) on DDP, 2 nodes x 2 ranks, started by the node's launch
script (launch_node.sh); each node's stdout and stderr go to out/node<N>/train.out and train.err. Each rank streams
its shard in parts of 40 batches (shards/rank<R>/part-NNN.pt), loading the next part when one is used up."""
import datetime
import glob
import json
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

RANK, NODE = int(os.environ["RANK"]), int(os.environ["NODE_RANK"])
SKEW = float(os.environ.get("ZOO_CLOCK_OFFSET_S", "0"))  # this node's clock error (NTP drift), set by the recorder


class Fmt(logging.Formatter):
    converter = staticmethod(lambda secs: time.localtime(secs + SKEW))

    def formatTime(self, record, datefmt=None):
        t = record.created + SKEW
        return time.strftime("%H:%M:%S", self.converter(record.created)) + f",{int(t * 1000) % 1000:03d}"


h = logging.StreamHandler()
h.setFormatter(Fmt(f"%(asctime)s node{NODE} rank{RANK} %(levelname)-5s %(message)s"))
log = logging.getLogger("tagger")
log.addHandler(h)
log.setLevel(logging.INFO)

STEPS, BATCH = 320, 64


def parts(rank):
    for path in sorted(glob.glob(f"shards/rank{rank}/part-*.pt")):
        log.info("loading %s", path)
        part = torch.load(path)
        for i in range(0, len(part["x"]), BATCH):
            yield part["x"][i:i + BATCH], part["y"][i:i + BATCH]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    print(json.dumps({"rank": RANK, "node": NODE, "world": dist.get_world_size(), "steps": STEPS, "batch": BATCH}),
          flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 20)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = parts(RANK)
    step = 0
    try:
        for step in range(1, STEPS + 1):
            x, y = next(data)
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                log.info("step %d/%d loss %.4f", step, STEPS, loss.item())
    except Exception:
        log.exception("step %d failed", step)
        raise
    log.info("done")


if __name__ == "__main__":
    main()
