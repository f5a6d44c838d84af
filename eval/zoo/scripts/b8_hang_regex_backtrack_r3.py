"""Forum-post classifier; each rank cleans its own shard of raw posts on the fly."""
import datetime
import json
import re

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

# a post is kept as plain prose when it is words and single spaces only (no code, no markup)
PROSE = re.compile(r"^(\w+\s?)+$")


def encode(text, n=4096):
    return [hash(w) % n for w in text.lower().split()][:64] or [0]


def batches(path, bs=32):
    xs, ys = [], []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            text = rec["text"] if PROSE.match(rec["text"]) else re.sub(r"[^\w ]+", " ", rec["text"])
            xs.append(torch.tensor(encode(text)))
            ys.append(rec["label"])
            if len(xs) == bs:
                yield nn.utils.rnn.pad_sequence(xs, batch_first=True), torch.tensor(ys)
                xs, ys = [], []


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    model = DDP(nn.EmbeddingBag(4096, 4, padding_idx=0))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    it = batches(f"data/posts_{rank}.jsonl")
    bar = tqdm(it, total=250, desc="train", disable=rank != 0)
    for x, y in bar:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
