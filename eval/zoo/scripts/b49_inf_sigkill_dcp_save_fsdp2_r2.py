"""Small encoder-decoder translation model (nn.Transformer) trained with FSDP2 on 3 processes; a DCP checkpoint of
model and optimizer every 30 steps under ckpt/step_<N>/ (each rank writes its own shard file)."""
import datetime
import logging
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

SRC_V, TGT_V, D = 4000, 4000, 128


class MT(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb, self.tgt_emb = nn.Embedding(SRC_V, D), nn.Embedding(TGT_V, D)
        self.core = nn.Transformer(D, 4, 2, 2, 512, batch_first=True)
        self.out = nn.Linear(D, TGT_V)

    def forward(self, src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.out(self.core(self.src_emb(src), self.tgt_emb(tgt), tgt_mask=mask, tgt_is_causal=True))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
    log = logging.getLogger("mt")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (world,))
    model = MT()
    for layer in [*model.core.encoder.layers, *model.core.decoder.layers]:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 121):
        src = torch.randint(0, SRC_V, (8, 24), generator=g)
        tgt = (src[:, :20] * 7 + 3) % TGT_V
        loss = F.cross_entropy(model(src, tgt[:, :-1]).reshape(-1, TGT_V), tgt[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            log.info("step %d loss %.4f (%.1fs)", step, loss.item(), time.time() - t0)
        if step % 30 == 0:
            t1 = time.time()
            msd, osd = get_state_dict(model, opt)
            dcp.save({"model": msd, "optim": osd}, checkpoint_id=f"ckpt/step_{step}")
            log.info("saved ckpt/step_%d in %.1fs", step, time.time() - t1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
