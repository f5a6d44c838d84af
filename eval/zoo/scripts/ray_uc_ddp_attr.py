import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import ray.train
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer, prepare_data_loader, prepare_model


class Classifier(nn.Module):
    def __init__(self, d_in=32, hidden=64, n_classes=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.head(self.encoder(x))


def train_func(config):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(4096, 32, generator=g)
    y = (X[:, :4].argmax(1)).long()
    loader = prepare_data_loader(DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True))
    model = prepare_model(Classifier())
    opt = torch.optim.AdamW(model.parameters(), lr=config["lr"])
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(config["epochs"]):
        if ray.train.get_context().get_world_size() > 1:
            loader.sampler.set_epoch(epoch)
        if epoch == config["freeze_encoder_at"]:
            # fine-tune only the head from here on
            for p in model.encoder.parameters():
                p.requires_grad = False
        total, n = 0.0, 0
        for x, t in loader:
            loss = loss_fn(model(x), t)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            n += 1
        ray.train.report({"epoch": epoch, "loss": total / n})


if __name__ == "__main__":
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"lr": 3e-3, "epochs": 6, "freeze_encoder_at": 3},
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
    )
    result = trainer.fit()
    print("final metrics:", result.metrics)
