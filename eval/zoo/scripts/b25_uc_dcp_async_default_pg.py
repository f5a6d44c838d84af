"""Small transformer LM, DDP over gloo; sharded checkpoints with torch.distributed.checkpoint.async_save every 100
steps so that training does not wait for the write (the previous save is awaited before the next one starts);
tqdm bar on rank 0, a line per checkpoint."""
import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from tqdm import tqdm

VOCAB, SEQ = 8000, 64
CKPT_ROOT = "/mnt/ckpt25/lm-small"


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 256)
        self.block = nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
        self.out = nn.Linear(256, VOCAB)

    def forward(self, x):
        return self.out(self.block(self.emb(x)))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(LM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    pending = None
    bar = tqdm(range(1, 601), disable=rank != 0, desc="train")
    for step in bar:
        x = torch.randint(0, VOCAB, (8, SEQ), generator=g)
        loss = nn.functional.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % 100 == 0:
            if pending is not None:
                pending.result()
            path = os.path.join(CKPT_ROOT, f"step_{step:06d}")
            state = {"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step}
            pending = dcp.async_save(state, checkpoint_id=path)
            if rank == 0:
                tqdm.write(f"checkpoint step {step} -> {path} (async)")
    if pending is not None:
        pending.result()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
