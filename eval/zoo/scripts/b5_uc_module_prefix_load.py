"""Fine-tune a classifier head on top of the encoder from our pre-training run."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Encoder(nn.Module):
    def __init__(self, d_in=96, d=192):
        super().__init__()
        self.proj = nn.Linear(d_in, d)
        self.block = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))

    def forward(self, x):
        h = self.proj(x)
        return h + self.block(h)


class Classifier(nn.Module):
    def __init__(self, n_classes=12):
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(192, n_classes)

    def forward(self, x):
        return self.head(self.encoder(x))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = Classifier()
    state = torch.load("pretrained/encoder_final.pt", map_location="cpu")
    model.encoder.load_state_dict(state)
    print(f"rank {rank}: loaded pre-trained encoder ({len(state)} tensors)")
    for p in model.encoder.parameters():
        p.requires_grad_(False)
    model = DDP(model)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], 1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(200):
        x = torch.randn(48, 96, generator=g)
        y = torch.randint(0, 12, (48,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
