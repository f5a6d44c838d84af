"""Code-search bi-encoder, accelerate (CPU, gloo), 2 processes. Each process builds its part of the
token index from the corpus before training; accelerate's logger with asctime."""
import logging
import random
import time
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger

logger = get_logger(__name__)


def build_index(rank, world, n_docs=96000):
    rng = random.Random(1234)
    vocab = {}
    docs = []
    for i in range(n_docs):
        toks = [f"tok{rng.randrange(30000)}" for _ in range(48)]
        if i % world != rank:
            continue
        ids = []
        for t in toks:
            ids.append(vocab.setdefault(t, len(vocab) % 8000))
        docs.append(ids)
        if len(docs) % 8000 == 0:
            logger.info(f"indexing corpus: {len(docs)}/{n_docs // world} documents", main_process_only=False)
    return torch.tensor(docs)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    logger.info(f"process {acc.process_index}/{acc.num_processes} started", main_process_only=False)
    t0 = time.time()
    docs = build_index(acc.process_index, acc.num_processes)
    logger.info(f"index ready: {tuple(docs.shape)} in {time.time() - t0:.1f}s", main_process_only=False)
    model = nn.Sequential(nn.EmbeddingBag(8000, 128), nn.Linear(128, 128))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    model, opt = acc.prepare(model, opt)
    for step in range(1, 301):
        idx = torch.randint(0, len(docs), (64,))
        q, d = docs[idx, :16], docs[idx, 16:]
        qe, de = model(q), model(d)
        loss = nn.functional.cross_entropy(qe @ de.T, torch.arange(64))
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 25 == 0:
            logger.info(f"step {step}/300 loss {loss.item():.4f}")
    acc.wait_for_everyone()
    logger.info("training finished")


if __name__ == "__main__":
    main()
