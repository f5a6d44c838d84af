import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Squares(Dataset):
    def __len__(self):
        return 512

    def __getitem__(self, i):
        x = torch.tensor([i / 512.0])
        return x, x ** 2


def main():
    dist.init_process_group("gloo")
    ds = Squares()
    loader = DataLoader(
        ds,
        batch_size=32,
        sampler=DistributedSampler(ds),
        num_workers=2,
        multiprocessing_context="spawn",
        collate_fn=lambda batch: tuple(torch.stack(t) for t in zip(*batch)),
    )
    model = DDP(torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(5):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"rank {dist.get_rank()} epoch {epoch} mse {loss.item():.5f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
