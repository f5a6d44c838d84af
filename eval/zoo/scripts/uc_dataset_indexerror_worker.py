"""Variable-length records stored as one flat array + offsets."""
import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class PackedRecords(Dataset):
    def __init__(self, n=101, seed=0):
        rng = np.random.default_rng(seed)
        lengths = rng.integers(4, 12, size=n)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)])[:-1]  # start of each record
        self.flat = rng.standard_normal(int(lengths.sum())).astype(np.float32)

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, idx):
        start, end = self.offsets[idx], self.offsets[idx + 1]
        rec = torch.from_numpy(self.flat[start:end])
        return rec.mean().unsqueeze(0), rec.std().unsqueeze(0)


def main():
    dist.init_process_group("gloo")
    ds = PackedRecords()
    sampler = DistributedSampler(ds, shuffle=False)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2)
    model = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[rank{dist.get_rank()}] epoch {epoch} done, {i + 1} batches, loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
