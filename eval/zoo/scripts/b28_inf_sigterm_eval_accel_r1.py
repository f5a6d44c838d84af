"""Image-patch classifier trained with accelerate (CPU, 2 processes); every 200 steps each process evaluates on its
half of the validation set and the main process logs the gathered accuracy."""
import time

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import InitProcessGroupKwargs
import datetime
import logging

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = get_logger("patches")
STEPS = 800


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=20))])
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    val = [(torch.randn(64, 3, 16, 16, generator=g), torch.randint(0, 10, (64,), generator=g)) for _ in range(150)]
    log.info("training %d steps on %d processes", STEPS, acc.num_processes)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(64, 3, 16, 16, generator=g)
        y = torch.randint(0, 10, (64,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 50 == 0:
            log.info("step %d/%d loss %.4f %.1f ms/step", step, STEPS, loss.item(), (time.time() - t0) / 50 * 1000)
            t0 = time.time()
        if step % 200 == 0:
            print(f"[process {acc.process_index}] evaluating at step {step} on {len(val)} batches", flush=True)
            model.eval()
            correct = torch.zeros(1)
            with torch.no_grad():
                for vx, vy in val:
                    correct += (model(vx).argmax(1) == vy).sum()
                    time.sleep(0.01)
            correct = acc.gather(correct).sum()
            model.train()
            log.info("step %d val_acc %.4f", step, correct.item() / (len(val) * 64 * acc.num_processes))
    acc.wait_for_everyone()
    log.info("done")


if __name__ == "__main__":
    main()
