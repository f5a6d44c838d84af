"""Audio-event tagger (log-mel CNN), accelerate (CPU, gloo), 2 processes, 2 DataLoader workers each that
compute log-mel features from raw waveforms on the fly. Every process logs its step time and its
data-wait time every 20 steps."""
import logging
import time
from datetime import timedelta

import torch
import torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger
from torch.utils.data import DataLoader, Dataset

logger = get_logger("audio_tagger")


class Clips(Dataset):
    def __init__(self, n, seed):
        self.n, self.seed = n, seed
        self.window = torch.hann_window(1024)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 100000 + i)
        wav = torch.randn(16000, generator=g)
        spec = torch.stft(wav, 1024, 160, window=self.window, return_complex=True).abs() ** 2
        mel = torch.log(spec[:64] + 1e-6)
        return mel, i % 20


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                               nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                               nn.Linear(32, 20))

    def forward(self, x):
        return self.f(x.unsqueeze(1))


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=30))])
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    dl = DataLoader(Clips(4800, acc.process_index), batch_size=16, shuffle=False, num_workers=2,
                    prefetch_factor=2)
    model, opt = CNN(), None
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    total = len(dl)
    t_last, wait = time.time(), 0.0
    t_data = time.time()
    for step, (x, y) in enumerate(dl, 1):
        wait += time.time() - t_data
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 20 == 0:
            dt = (time.time() - t_last) / 20 * 1000
            logger.info(f"step {step}/{total} loss {loss.item():.4f} "
                        f"step_time {dt:.1f} ms data_wait {wait / 20 * 1000:.1f} ms", main_process_only=False)
            t_last, wait = time.time(), 0.0
        t_data = time.time()
    acc.wait_for_everyone()
    logger.info("finished: %d steps", total)


if __name__ == "__main__":
    main()
