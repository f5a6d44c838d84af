"""Speaker-embedding model (x-vector style TDNN) trained with accelerate on two nodes, one process each.
Features are synthetic log-mel frames; the loss is additive-margin softmax over 1,200 speakers."""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.logging import get_logger

logger = get_logger(__name__, log_level="INFO")
STEPS = 1500


class TDNN(nn.Module):
    def __init__(self, n_mels=40, dim=256, spk=1200):
        super().__init__()
        self.frames = nn.Sequential(nn.Conv1d(n_mels, dim, 5, dilation=1), nn.ReLU(),
                                    nn.Conv1d(dim, dim, 3, dilation=2), nn.ReLU(),
                                    nn.Conv1d(dim, dim, 3, dilation=3), nn.ReLU())
        self.emb = nn.Linear(2 * dim, 192)
        self.w = nn.Parameter(torch.randn(spk, 192) * 0.01)

    def forward(self, x):
        h = self.frames(x)
        stats = torch.cat([h.mean(-1), h.std(-1)], dim=1)
        return F.normalize(self.emb(stats), dim=-1)


def am_softmax(emb, w, y, s=30.0, m=0.2):
    cos = emb @ F.normalize(w, dim=-1).T
    return F.cross_entropy(s * (cos - m * F.one_hot(y, cos.shape[1])), y)


def main():
    import logging
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = TDNN()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    model, opt = acc.prepare(model, opt)
    logger.info(f"process {acc.process_index}/{acc.num_processes}: ready", main_process_only=False)
    g = torch.Generator().manual_seed(acc.process_index)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(32, 40, 120, generator=g)
        y = torch.randint(0, 1200, (32,), generator=g)
        with acc.accumulate(model):
            loss = am_softmax(model(x), acc.unwrap_model(model).w, y)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
        if step % 50 == 0:
            logger.info(f"[process {acc.process_index}] step {step}/{STEPS} loss {loss.item():.4f} "
                        f"{(time.time() - t0) / 50 * 1000:.0f} ms/step", main_process_only=False)
            t0 = time.time()
    acc.wait_for_everyone()
    logger.info("training finished")


if __name__ == "__main__":
    main()
