"""Click-through-rate model (hashed features -> MLP), DDP over gloo, one process per node, two nodes with c10d
rendezvous. One JSON object per log line (the platform's log shipper parses them)."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def jlog(**kw):
    kw = {"ts": datetime.datetime.now().isoformat(timespec="milliseconds"), "rank": int(os.environ["RANK"]), **kw}
    print(json.dumps(kw), flush=True)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    jlog(event="init", world_size=world, node=os.environ.get("GROUP_RANK"), restart=os.environ.get("TORCHELASTIC_RESTART_COUNT"))
    torch.manual_seed(rank)
    emb = nn.EmbeddingBag(2 ** 16, 32, mode="sum")
    model = DDP(nn.ModuleDict({"emb": emb, "mlp": nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))}))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    step, t0 = 0, time.time()
    for epoch in range(8):
        for _ in range(250):
            ids = torch.randint(0, 2 ** 16, (128, 24))
            y = (ids[:, 0] % 5 == 0).float()
            logit = model.module["mlp"](model.module["emb"](ids)).squeeze(1)
            loss = nn.functional.binary_cross_entropy_with_logits(logit, y)
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad /= world
            opt.step()
            step += 1
            if step % 50 == 0:
                jlog(event="train", epoch=epoch, step=step, loss=round(loss.item(), 4), sps=round(step / (time.time() - t0), 1))
        # epoch-end bookkeeping through the job's store (the same key/value store torchrun set up)
        store = dist.distributed_c10d._get_default_store()
        store.set(f"epoch{epoch}/rank{rank}/loss", str(loss.item()))
        dist.barrier()
        jlog(event="epoch_end", epoch=epoch, step=step)
    jlog(event="done", step=step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
