"""Language model (small transformer), DDP over gloo; rank 0 saves a full checkpoint (model + Adam state) every 150
steps; tqdm progress bar on rank 0."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(128, 4, 512, batch_first=True)
    model = DDP(nn.Sequential(nn.Embedding(30000, 128), nn.TransformerEncoder(layer, 2), nn.Linear(128, 30000)))
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    os.makedirs("ckpt", exist_ok=True)
    bar = tqdm(range(1, 901), disable=rank != 0, mininterval=2.0)
    for step in bar:
        ids = torch.randint(0, 30000, (4, 32))
        logits = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 30000), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % 150 == 0:
            if rank == 0:
                tqdm.write(f"saving checkpoint ckpt/step_{step}.pt")
                for k in range(4):  # the trainer keeps the optimizer state in fp32 copies too
                    torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step},
                               f"ckpt/step_{step}.pt" if k == 0 else f"ckpt/step_{step}.pt.part{k}")
                tqdm.write(f"saved ckpt/step_{step}.pt")
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
