"""Review-sentiment classifier moved from the team's torchrun template to accelerate: the Accelerator now owns the
process group, but the template's distributed set-up helper is still called; JSON log records."""
import json
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from accelerate import Accelerator


class JsonFormatter(logging.Formatter):
    def format(self, r):
        return json.dumps({"time": self.formatTime(r), "level": r.levelname, "logger": r.name,
                           "rank": int(os.environ.get("RANK", 0)), "msg": r.getMessage()})


h = logging.StreamHandler()
h.setFormatter(JsonFormatter())
logging.basicConfig(level=logging.INFO, handlers=[h])
log = logging.getLogger("sentiment")


def setup_distributed(backend="gloo"):
    """From the template: join the job's process group (torchrun sets the env:// variables)."""
    dist.init_process_group(backend=backend, init_method="env://")
    log.info("joined process group: rank %d of %d", dist.get_rank(), dist.get_world_size())


def main():
    acc = Accelerator(cpu=True)
    log.info("accelerator ready: %s, %d processes", acc.distributed_type, acc.num_processes)
    setup_distributed()
    torch.manual_seed(0)
    model = nn.Sequential(nn.EmbeddingBag(30000, 128), nn.Linear(128, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    t0 = time.time()
    for step in range(1, 501):
        x = torch.randint(0, 30000, (64, 64), generator=g)
        loss = nn.functional.cross_entropy(model(x), x[:, 0] % 3)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 50 == 0:
            log.info("step %d/500 loss %.4f %.1f ms/step", step, loss.item(), (time.time() - t0) * 20)
            t0 = time.time()


if __name__ == "__main__":
    main()
