"""Intent classifier (bag of hashed tokens + MLP) on DDP, 4 ranks; each rank streams its own part of the support-chat
export (data/part-0R.jsonl) through an IterableDataset with one loader worker. Launched the torchtitan way, with
--local-ranks-filter 0 so the console only carries rank 0; the entry point is wrapped in torchelastic's @record so a
failing rank's error reaches the launcher's summary."""
import datetime
import json
import logging
import time
import zlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset

log = logging.getLogger("intent")
VOCAB, N_INTENTS = 2 ** 15, 12


class ChatLines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as f:
            for line in f:
                rec = json.loads(line)
                toks = [zlib.crc32(w.encode()) % VOCAB for w in rec["text"].lower().split()][:48]
                yield torch.tensor(toks + [0] * (48 - len(toks))), rec["intent"]


@record
def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format="[titan] %(asctime)s - %(name)s - %(levelname)s - %(message)s")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.EmbeddingBag(VOCAB, 64, mode="mean", padding_idx=0), nn.Linear(64, 128), nn.ReLU(),
                              nn.Linear(128, N_INTENTS)))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loader = DataLoader(ChatLines(f"data/part-{rank:02d}.jsonl"), batch_size=32, num_workers=1)
    log.info("Training starts: world size %d, batch 32 per rank", world)
    t0 = time.time()
    for step, (x, y) in enumerate(loader, 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("step: %3d  loss: %6.4f  wps: %d", step, loss.item(), int(10 * 32 * world / (time.time() - t0)))
            t0 = time.time()
    log.info("Training completed")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
