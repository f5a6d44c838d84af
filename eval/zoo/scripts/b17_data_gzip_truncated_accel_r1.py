"""Review-rating regressor, accelerate (CPU, gloo), 2 processes; each process streams its own gzip-compressed
jsonl part (data/reviews-0000K.jsonl.gz) line by line; tqdm bar on the main process."""
import gzip
import json
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from tqdm.auto import tqdm

VOCAB = 20000


def batches(path, bs=64):
    ids, ys = [], []
    with gzip.open(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            ids.append([hash(w) % VOCAB for w in r["text"].split()][:48] + [0] * max(0, 48 - len(r["text"].split())))
            ys.append(float(r["stars"]))
            if len(ids) == bs:
                yield torch.tensor(ids), torch.tensor(ys)
                ids, ys = [], []


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    path = f"data/reviews-{acc.process_index:05d}.jsonl.gz"
    acc.print(f"{acc.num_processes} processes, streaming data/reviews-*.jsonl.gz")
    model = nn.Sequential(nn.EmbeddingBag(VOCAB, 64), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    bar = tqdm(total=300, disable=not acc.is_main_process, desc="train")
    step = 0
    for x, y in batches(path):
        loss = nn.functional.mse_loss(model(x).squeeze(1), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        step += 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if step == 300:
            break
    bar.close()
    acc.wait_for_everyone()
    acc.print("done")


if __name__ == "__main__":
    main()
