import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

import ray.train
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer, prepare_data_loader, prepare_model


class AugmentedImages(Dataset):
    """Synthetic 3x96x96 images; decoded + augmented views are cached so epoch 2+ is fast."""

    def __init__(self, n=6000):
        self.n = n
        self.cache = {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i not in self.cache:
            rng = np.random.default_rng(i)
            img = rng.random((3, 96, 96), dtype=np.float32)
            views = np.stack([img, img[:, ::-1, :], img[:, :, ::-1], img.transpose(0, 2, 1)])
            self.cache[i] = torch.from_numpy(views.copy())
        return self.cache[i][i % 4], i % 10


def train_func(config):
    rank = ray.train.get_context().get_world_rank()
    ds = AugmentedImages()
    loader = prepare_data_loader(DataLoader(ds, batch_size=32, shuffle=True))
    model = prepare_model(nn.Sequential(nn.Conv2d(3, 8, 5, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
                                        nn.Flatten(), nn.Linear(128, 10)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(config["epochs"]):
        for it, (x, t) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), t)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if it % 20 == 0:
                print(f"[worker {rank}] epoch {epoch} iter {it} loss {loss.item():.4f} cached {len(ds.cache)}")
        ray.train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 3},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False))
    print(trainer.fit().metrics)
