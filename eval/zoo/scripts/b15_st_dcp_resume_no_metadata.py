"""Next-token model over query logs (embedding + MLP over a 16-token window), DDP over gloo, 2 ranks. Checkpoints with
torch.distributed.checkpoint (model + AdamW) every 200 steps into checkpoints/step_NNNNNN/; on start the job resumes
from the newest one."""
import glob
import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s %(levelname)s [rank" + os.environ.get("RANK", "0") + "] %(message)s",
                    level=logging.INFO)
log = logging.getLogger("querylm")


def build():
    return nn.Sequential(nn.Embedding(8000, 128), nn.Flatten(), nn.Linear(128 * 16, 256), nn.ReLU(),
                         nn.Linear(256, 8000))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = build()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = 0
    ckpts = sorted(glob.glob("checkpoints/step_*"))
    if ckpts:
        path = ckpts[-1]
        log.info("resuming from %s", path)
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd, "step": torch.tensor(0)}
        dcp.load(state, checkpoint_id=path)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        start = int(state["step"])
        log.info("resumed at step %d", start)
    else:
        log.info("no checkpoint found, starting from scratch")
    ddp = DDP(model)
    g = torch.Generator().manual_seed(rank)
    for step in range(start + 1, start + 401):
        x = torch.randint(0, 8000, (32, 16), generator=g)
        y = (x[:, -1] * 7 + 3) % 8000
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d loss %.4f", step, loss.item())
        if step % 200 == 0:
            msd, osd = get_state_dict(model, opt)
            dcp.save({"model": msd, "optim": osd, "step": torch.tensor(step)},
                     checkpoint_id=f"checkpoints/step_{step:06d}")
            log.info("saved checkpoints/step_%06d", step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
