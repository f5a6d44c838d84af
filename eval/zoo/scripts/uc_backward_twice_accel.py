import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

accelerator = Accelerator(cpu=True)
accum_steps = 4

X = torch.randn(1024, 24)
Y = (X[:, :3].sum(1, keepdim=True) > 0).float()
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(24, 48), torch.nn.ReLU(), torch.nn.Linear(48, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
loss_fn = torch.nn.BCEWithLogitsLoss()

for epoch in range(2):
    running = 0.0
    for step, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y) / accum_steps
        running = running + loss
        accelerator.backward(running)
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
            accelerator.print(f"epoch {epoch} step {step + 1} loss {running.item():.4f}")
            running = 0.0
accelerator.print("done")
