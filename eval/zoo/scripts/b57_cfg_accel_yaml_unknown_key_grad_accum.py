"""Speech-command classifier (small 1-D CNN on log-mel frames) trained with accelerate on 2 CPU processes; the
launch settings come from the repository's configs/accelerate_cpu.yaml (accelerate launch --config_file)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator

acc = Accelerator(cpu=True)
torch.manual_seed(0)
g = torch.Generator().manual_seed(acc.process_index)
x = torch.randn(2048, 40, 98, generator=g)
y = torch.randint(0, 12, (2048,), generator=g)
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Conv1d(40, 64, 5), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 12))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, opt, dl = acc.prepare(model, opt, dl)
for epoch in range(2):
    for step, (xb, yb) in enumerate(dl):
        with acc.accumulate(model):
            loss = F.cross_entropy(model(xb), yb)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
        if step % 20 == 0:
            acc.print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
acc.print("done")
