import datetime
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model):
    model.eval()
    correct = torch.zeros(1)
    with torch.no_grad():
        for _ in range(10):
            x = torch.randn(64, 10)
            correct += (model(x).argmax(1) == (x.sum(1) > 0).long()).sum()
    dist.all_reduce(correct)  # accuracy over all ranks
    model.train()
    return correct.item() / (640 * dist.get_world_size())


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(4):
        for _ in range(25):
            x = torch.randn(64, 10)
            y = (x.sum(1) > 0).long()
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            acc = evaluate(model)
            print(f"epoch {epoch} loss {loss.item():.4f} val_acc {acc:.3f}", flush=True)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
