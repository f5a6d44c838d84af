"""MoCo-style contrastive pre-training of a small sensor encoder under accelerate (DDP over gloo, CPU). Every 100 steps
each process hands its negative queue to the next process in a ring (point-to-point), so every queue sees every
shard's negatives."""
import datetime
import logging

import torch
import torch.distributed as dist
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
logger = get_logger(__name__)
QUEUE = 4096


def exchange_queue(queue, rank, world):
    incoming = torch.empty_like(queue)
    dist.send(queue, dst=(rank + 1) % world)
    dist.recv(incoming, src=(rank - 1) % world)
    return incoming


def main():
    accelerator = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=20))])
    rank, world = accelerator.process_index, accelerator.num_processes
    enc = nn.Sequential(nn.Linear(60, 256), nn.ReLU(), nn.Linear(256, 128))
    opt = torch.optim.SGD(enc.parameters(), lr=0.03, momentum=0.9)
    enc, opt = accelerator.prepare(enc, opt)
    queue = nn.functional.normalize(torch.randn(QUEUE, 128), dim=1)
    g = torch.Generator().manual_seed(rank)
    logger.info("process %d/%d: queue %d, ring refresh every 100 steps", rank, world, QUEUE, main_process_only=False)
    for step in range(1, 601):
        x = torch.randn(128, 60, generator=g)
        q = nn.functional.normalize(enc(x + 0.1 * torch.randn_like(x)), dim=1)
        with torch.no_grad():
            k = nn.functional.normalize(enc(x), dim=1)
        logits = torch.cat([(q * k).sum(1, keepdim=True), q @ queue.T], 1) / 0.07
        loss = nn.functional.cross_entropy(logits, torch.zeros(128, dtype=torch.long))
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        queue = torch.cat([k.detach(), queue])[:QUEUE]
        if step % 20 == 0:
            logger.info("step %d/600 loss %.4f", step, loss.item())
        if step % 100 == 0:
            logger.info("step %d: refreshing negative queue from process %d", step, (rank - 1) % world,
                        main_process_only=False)
            queue = exchange_queue(queue, rank, world)
    accelerator.end_training()


if __name__ == "__main__":
    main()
