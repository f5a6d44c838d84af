import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class AudioClips(Dataset):
    def __init__(self, n=4000):
        self.n = n
        self.decoded = {}  # decode once, reuse later

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i not in self.decoded:
            self.decoded[i] = np.random.rand(16000 * 10).astype(np.float32)  # 10 s of audio
        wav = self.decoded[i]
        return torch.from_numpy(wav[:400]), torch.tensor(float(wav.mean()))


def main():
    dist.init_process_group("gloo")
    time.sleep(2)
    ds = AudioClips()
    loader = DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds), num_workers=2)
    model = DDP(torch.nn.Linear(400, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for epoch in range(2):
        for step, (x, y) in enumerate(loader):
            loss = (model(x).squeeze(1) - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                print(f"rank {dist.get_rank()} epoch {epoch} step {step}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
