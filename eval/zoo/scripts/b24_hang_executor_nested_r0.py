"""Product-review sentiment model (embedding bag + MLP) with accelerate; the main process copies each checkpoint to the
team's shared results store in the background (a one-thread executor) so training does not wait for the upload."""
import concurrent.futures as cf
import datetime
import logging
import os
import shutil

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
logger = get_logger(__name__)
UPLOADS = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="upload")


def upload_file(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(src, dst)
    return os.path.getsize(dst)


def upload_dir(src, dst):
    futs = [UPLOADS.submit(upload_file, os.path.join(src, f), os.path.join(dst, f)) for f in sorted(os.listdir(src))]
    return sum(f.result() for f in futs)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=20))])
    model = nn.Sequential(nn.EmbeddingBag(30000, 128), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 3))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    pending = None
    for step in range(1, 601):
        x = torch.randint(0, 30000, (64, 40), generator=g)
        y = torch.randint(0, 3, (64,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 50 == 0:
            logger.info(f"step {step}/600 loss {loss.item():.4f}")
        if step % 150 == 0:
            out = f"outputs/sentiment/step_{step}"
            acc.save_state(out)
            if acc.is_main_process:
                if pending is not None:
                    logger.info(f"previous upload: {pending.result()} bytes")
                logger.info(f"uploading {out} to results-store/sentiment/step_{step}")
                pending = UPLOADS.submit(upload_dir, out, f"results-store/sentiment/step_{step}")
    if acc.is_main_process and pending is not None:
        logger.info(f"last upload: {pending.result()} bytes")
    logger.info("training finished")


if __name__ == "__main__":
    main()
