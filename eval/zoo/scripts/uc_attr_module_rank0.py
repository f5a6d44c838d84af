import os
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Net()
    ddp_model = DDP(model)
    opt = torch.optim.Adam(ddp_model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(3):
        for step in range(20):
            x = torch.randn(16, 32)
            y = torch.randint(0, 4, (16,))
            opt.zero_grad()
            loss = loss_fn(ddp_model(x), y)
            loss.backward()
            opt.step()
        print(f"rank {rank} epoch {epoch} loss {loss.item():.4f}")
        if rank == 0:
            os.makedirs("checkpoints", exist_ok=True)
            torch.save(model.module.state_dict(), f"checkpoints/epoch{epoch}.pt")
            print(f"saved checkpoints/epoch{epoch}.pt")

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
