"""Environmental-sound classifier: each sample is a 1 s clip turned into a log spectrogram in the Dataset (numpy STFT)
by 2 DataLoader workers per rank; DDP over gloo; one JSON line per rank every 10 steps with data/step times."""
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn


class Clips(torch.utils.data.Dataset):
    def __init__(self, rank, n=6000):
        self.rank, self.n = rank, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.rank * 100000 + i)
        wav = rng.standard_normal(16000).astype(np.float32)
        frames = np.lib.stride_tricks.sliding_window_view(wav, 400)[::160] * np.hanning(400)
        spec = np.log1p(np.abs(np.fft.rfft(frames, axis=1)) ** 2)[:, :64]
        return torch.from_numpy(spec.astype(np.float32)), int(rng.integers(0, 50))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.set_num_threads(1)
    loader = torch.utils.data.DataLoader(Clips(rank), batch_size=16, num_workers=2, prefetch_factor=2)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Flatten(), nn.Linear(98 * 64, 256), nn.ReLU(),
                                                              nn.Linear(256, 50)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data_ms = step_ms = 0.0
    t_end = time.time()
    for step, (x, y) in enumerate(loader, 1):
        t_data = time.time()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        now = time.time()
        data_ms += (t_data - t_end) * 1000
        step_ms += (now - t_end) * 1000
        t_end = now
        if step % 10 == 0:
            print(json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "rank": rank, "step": step, "of": len(loader),
                              "loss": round(loss.item(), 4), "data_ms": round(data_ms / 10, 1),
                              "step_ms": round(step_ms / 10, 1)}), flush=True)
            data_ms = step_ms = 0.0
    print(json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "rank": rank, "event": "done"}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
