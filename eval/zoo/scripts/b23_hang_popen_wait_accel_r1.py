"""Small translation model (GRU encoder-decoder) with accelerate; each process encodes its part of the parallel
corpus with the team's subword tool (tools/spm_encode.py, run as a subprocess) before training."""
import datetime
import logging
import subprocess
import sys

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger
from tqdm.auto import tqdm

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
logger = get_logger(__name__)


def encode(path):
    proc = subprocess.Popen([sys.executable, "tools/spm_encode.py", "--model", "spm/deen-8k.model", path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.wait() != 0:
        raise RuntimeError(f"spm_encode failed on {path}: {proc.stderr.read()}")
    return [[int(t) for t in line.split()] for line in proc.stdout.read().splitlines()]


class Seq2Seq(nn.Module):
    def __init__(self, vocab=8000, d=256):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.GRU(d, d, batch_first=True)
        self.dec = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, src, tgt):
        _, h = self.enc(self.emb(src))
        o, _ = self.dec(self.emb(tgt), h)
        return self.out(o)


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=15))])
    part = f"data/wmt-deen.part-{acc.process_index}.txt"
    logger.info(f"encoding {part}", main_process_only=False)
    ids = encode(part)
    logger.info(f"encoded {len(ids)} sentence pairs from {part}", main_process_only=False)
    src = torch.tensor([r[:24] + [0] * (24 - len(r[:24])) for r in ids])
    model = Seq2Seq()
    opt = torch.optim.Adam(model.parameters(), lr=5e-4)
    model, opt = acc.prepare(model, opt)
    for epoch in range(3):
        bar = tqdm(range(0, len(src), 32), disable=not acc.is_local_main_process, desc=f"epoch {epoch}")
        for s in bar:
            x = src[s:s + 32]
            logits = model(x, x)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), x.flatten())
            opt.zero_grad()
            acc.backward(loss)
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
    logger.info("training done")


if __name__ == "__main__":
    main()
