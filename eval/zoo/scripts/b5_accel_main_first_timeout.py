"""Fine-tune a bag-of-ngrams intent classifier with accelerate; the main process builds the tokenized cache once."""
import os
import random
import time
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs

CACHE = "cache/intents_tokenized.pt"
N_DOCS = 120000
VOCAB = 1 << 15


def hashed_ngrams(text, n_max=3):
    toks = text.lower().split()
    ids = []
    for n in range(1, n_max + 1):
        for i in range(len(toks) - n + 1):
            ids.append(hash(" ".join(toks[i:i + n])) % VOCAB)
    return ids


def build_cache(accelerator):
    rng = random.Random(0)
    words = "book flight cancel order refund card balance weather alarm play music call mom set timer".split()
    docs, labels = [], []
    t0 = time.time()
    for i in range(N_DOCS):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(60, 160)))
        ids = sorted(set(hashed_ngrams(text)))
        docs.append(torch.tensor(ids[:128] + [0] * (128 - len(ids[:128]))))
        labels.append(words.index(text.split()[0]) % 8)
        if (i + 1) % 10000 == 0:
            accelerator.print(f"  tokenized {i + 1}/{N_DOCS} docs ({time.time() - t0:.1f}s)")
    os.makedirs(os.path.dirname(CACHE), exist_ok=True)
    torch.save({"x": torch.stack(docs), "y": torch.tensor(labels)}, CACHE)


def main():
    accelerator = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=15))])
    accelerator.print(f"processes: {accelerator.num_processes}")
    with accelerator.main_process_first():
        if not os.path.exists(CACHE):
            accelerator.print("building tokenized cache (first run)...")
            build_cache(accelerator)
        data = torch.load(CACHE)
    ds = torch.utils.data.TensorDataset(data["x"], data["y"])
    loader = torch.utils.data.DataLoader(ds, batch_size=64, shuffle=True)
    model = nn.Sequential(nn.EmbeddingBag(VOCAB, 64, padding_idx=0), nn.Linear(64, 8))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 50 == 0:
            accelerator.print(f"step {step} loss {loss.item():.4f}")
    accelerator.print("done")


if __name__ == "__main__":
    main()
