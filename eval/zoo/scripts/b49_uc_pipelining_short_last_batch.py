"""Sequence tagger split into 3 pipeline stages with torch.distributed.pipelining (GPipe schedule, 4 microbatches
per batch): stage 0 embeds the tokens, stage 1 mixes them with a convolution over the sequence, stage 2 classifies
each token. One stage per process."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

VOCAB, TAGS, SEQ, D = 5000, 17, 48, 128
BATCH, N_MICRO = 32, 4
MICRO = BATCH // N_MICRO


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)

    def forward(self, tokens):
        return self.emb(tokens).reshape(-1, D)  # (micro*seq, D): rows go over the wire flat


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(D, D, 5, padding=2)
        self.ff = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))

    def forward(self, h):
        x = h.view(MICRO, SEQ, D)  # back to (micro, seq, D)
        x = x + self.conv(x.transpose(1, 2)).transpose(1, 2)
        return (x + self.ff(x)).reshape(-1, D)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(D, TAGS)

    def forward(self, h):
        return self.out(h)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    module = [Embed, Mixer, Tagger][rank]()
    stage = PipelineStage(module, rank, world, torch.device("cpu"))
    sched = ScheduleGPipe(stage, n_microbatches=N_MICRO,
                          loss_fn=lambda out, tgt: F.cross_entropy(out, tgt.reshape(-1)))
    opt = torch.optim.AdamW(module.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)  # every stage draws the same batches
    tokens = torch.randint(0, VOCAB, (1000, SEQ), generator=g)
    tags = tokens % TAGS
    print(f"stage {rank}/{world}: {type(module).__name__} {sum(p.numel() for p in module.parameters())} params",
          flush=True)
    t0 = time.time()
    for epoch in range(2):
        for i in range(0, len(tokens), BATCH):  # 1000 sentences: the last batch holds 8
            x, y = tokens[i:i + BATCH], tags[i:i + BATCH]
            if rank == 0:
                sched.step(x)
            elif rank == world - 1:
                losses = []
                sched.step(target=y, losses=losses)
                step = i // BATCH + 1
                if step % 8 == 0:
                    print(f"epoch {epoch} batch {step} loss {torch.stack(losses).mean():.4f} "
                          f"{time.time() - t0:.1f}s", flush=True)
            else:
                sched.step()
            opt.step()
            opt.zero_grad()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
