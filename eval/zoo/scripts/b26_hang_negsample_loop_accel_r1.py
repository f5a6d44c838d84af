"""Product matching (offer -> catalogue entry) with a contrastive loss, trained with accelerate. Each process reads its
merchants' offer feeds part by part; every anchor gets one hard negative drawn from a different category of the same
part."""
import json
import logging
import random
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger
from tqdm.auto import tqdm

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
log = get_logger("matcher")
VOCAB = 20000


def read_part(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def batches(offers, rng, bs=32):
    order = list(range(len(offers)))
    rng.shuffle(order)
    for i in range(0, len(order) - bs + 1, bs):
        anchors, negs = [], []
        for a in order[i:i + bs]:
            n = rng.randrange(len(offers))
            while offers[n]["category"] == offers[a]["category"]:
                n = rng.randrange(len(offers))
            anchors.append(offers[a]["tokens"])
            negs.append(offers[n]["tokens"])
        yield torch.tensor(anchors), torch.tensor(negs)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    r = acc.process_index
    parts = [f"feeds/p{r}/part-{k:02d}.jsonl" for k in range(4)]
    torch.manual_seed(0)
    model = nn.Sequential(nn.EmbeddingBag(VOCAB, 128), nn.Linear(128, 128))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    rng = random.Random(r)
    bar = tqdm(total=4 * 37, desc="train", disable=not acc.is_local_main_process)
    step = 0
    for path in parts:
        offers = read_part(path)
        log.info(f"process {r}: {path}: {len(offers)} offers", main_process_only=False)
        for a, n in batches(offers, rng):
            za, zn = model(a), model(n)
            loss = nn.functional.softplus((za * zn).sum(1) - (za * za.roll(1, 0)).sum(1)).mean()
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.4f}")
    bar.close()
    log.info(f"process {r}: done, {step} steps", main_process_only=False)


if __name__ == "__main__":
    main()
