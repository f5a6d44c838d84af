import logging
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logger = logging.getLogger("train")


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    logging.basicConfig(format="%(asctime)s %(levelname)-7s %(name)s (rank %(rank)s) %(message)s",
                        level=logging.INFO)
    log = logging.LoggerAdapter(logger, {"rank": rank})
    warnings.warn("Using a target size that is different to the input size is deprecated", UserWarning)
    model = DDP(nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    all_scores, all_targets = [], []  # for the epoch-end AUC
    t_last = time.time()
    for step in range(1, 601):
        x = torch.randn(256, 512)
        target = (torch.rand(256, 1024) > 0.99).float()
        scores = model(x)
        loss = nn.functional.binary_cross_entropy_with_logits(scores, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        all_scores.append(scores.detach())
        all_targets.append(target)
        if step % 2 == 0:
            log.info("step %d loss %.5f %.0f ms/step", step, loss.item(), (time.time() - t_last) * 500)
            t_last = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
