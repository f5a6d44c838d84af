"""Named-entity tagger (embedding + BiGRU + linear) on DDP, 3 ranks, each on its own pre-tokenized shard
(data/ner-<rank>.pt: token ids and BIO tags, -100 on padding and unannotated tokens). A batch with no labelled
token gives a NaN loss, so such batches are skipped. Every 50 steps rank 0 writes a checkpoint and the ranks wait
for it at a barrier. On a collective error the rank writes its Flight Recorder trace (TORCH_FR_BUFFER_SIZE is set
by the job) for the on-call to read."""
import datetime
import logging
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s",
                    stream=sys.stdout)
log = logging.getLogger("ner")
torch.set_num_threads(1)


class Tagger(nn.Module):
    def __init__(self, vocab=8000, tags=9):
        super().__init__()
        self.emb = nn.Embedding(vocab, 96)
        self.rnn = nn.GRU(96, 96, batch_first=True, bidirectional=True)
        self.out = nn.Linear(192, tags)

    def forward(self, ids):
        return self.out(self.rnn(self.emb(ids))[0])


shard = torch.load(f"data/ner-{rank}.pt")
ids, tags = shard["ids"], shard["tags"]
log.info("shard data/ner-%d.pt: %d sentences", rank, len(ids))
torch.manual_seed(0)
model = DDP(Tagger())
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
BATCH, STEPS = 16, 300
os.makedirs("checkpoints", exist_ok=True)


def dump_flight_recorder():
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE", "fr/trace_rank_")
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    with open(f"{prefix}{rank}", "wb") as f:
        f.write(torch._C._distributed_c10d._dump_fr_trace())
    log.error("flight recorder trace written to %s%d", prefix, rank)


try:
    for step in range(1, STEPS + 1):
        lo = ((step - 1) * BATCH) % len(ids)
        x, y = ids[lo:lo + BATCH], tags[lo:lo + BATCH]
        if (y != -100).sum() == 0:
            log.warning("step %d: batch has no labelled tokens, skipping", step)
            continue
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("step %d/%d loss %.4f", step, STEPS, loss.item())
        if step % 50 == 0:
            if rank == 0:
                torch.save(model.module.state_dict(), f"checkpoints/tagger-step{step}.pt")
                log.info("saved checkpoints/tagger-step%d.pt", step)
            dist.barrier()
except Exception:
    dump_flight_recorder()
    raise
log.info("done")
dist.destroy_process_group()
