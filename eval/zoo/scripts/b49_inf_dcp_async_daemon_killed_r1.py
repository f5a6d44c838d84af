"""Two-tower retrieval model (user tower / item tower, in-batch softmax) trained with FSDP2 on 3 processes.
Checkpoints are written with DCP's process-based async save, so training continues while a background process
persists the state; the previous save is awaited before the next one starts."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict
from torch.distributed.checkpoint.state_dict_saver import AsyncCheckpointerType
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

SAVE_EVERY = 20


class Tower(nn.Module):
    def __init__(self, n_ids, d=128):
        super().__init__()
        self.emb = nn.EmbeddingBag(n_ids, d, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(d, 512), nn.ReLU(), nn.Linear(512, d))

    def forward(self, ids):
        return F.normalize(self.mlp(self.emb(ids)), dim=-1)


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.user, self.item = Tower(5_000), Tower(8_000)

    def forward(self, u, i):
        return self.user(u) @ self.item(i).T / 0.05


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (world,))
    model = TwoTower()
    fully_shard(model.user, mesh=mesh)
    fully_shard(model.item, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    pending = None
    t0 = time.time()
    for step in range(1, 121):
        u = torch.randint(0, 5_000, (128, 8), generator=g)
        i = torch.randint(0, 8_000, (128, 4), generator=g)
        loss = F.cross_entropy(model(u, i), torch.arange(128))
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            print(f"[{rank}] step {step} loss {loss.item():.4f} elapsed {time.time() - t0:.1f}s", flush=True)
        if step % SAVE_EVERY == 0:
            if pending is not None:
                pending.result()  # the previous checkpoint must be on disk before the next one
                print(f"[{rank}] checkpoint step {step - SAVE_EVERY} persisted", flush=True)
            msd, osd = get_state_dict(model, opt)
            pending = dcp.async_save({"model": msd, "optim": osd}, checkpoint_id=f"ckpt/step_{step:06d}",
                                     async_checkpointer_type=AsyncCheckpointerType.PROCESS)
            print(f"[{rank}] checkpoint step {step} queued (async, process)", flush=True)
    if pending is not None:
        pending.result()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
