# Image-patch classifier trained with accelerate + tqdm. From epoch 2 the script logs per-layer gradient norms
# (a debugging aid that was left on): one all_reduce and one .item() per weight matrix every step.
import torch
import torch.nn as nn
from accelerate import Accelerator
from tqdm.auto import tqdm


def main():
    acc = Accelerator(cpu=True)
    torch.manual_seed(acc.process_index)
    layers = []
    for _ in range(12):
        layers += [nn.Linear(192, 192), nn.LayerNorm(192), nn.GELU()]
    model = nn.Sequential(nn.Linear(48, 192), *layers, nn.Linear(192, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    x_all = torch.randn(8000, 48)
    y_all = torch.randint(0, 10, (8000,))
    dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_all, y_all), batch_size=32, shuffle=True)
    model, opt, dl = acc.prepare(model, opt, dl)
    grad_norms = {}
    for epoch in range(1, 4):
        bar = tqdm(dl, desc=f"epoch {epoch}", disable=not acc.is_local_main_process)
        for x, y in bar:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            acc.backward(loss)
            if epoch >= 2:
                for name, p in model.named_parameters():
                    if p.dim() < 2:
                        continue
                    g = p.grad.detach().norm().reshape(1)
                    torch.distributed.all_reduce(g)
                    grad_norms[name] = g.item()
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
    acc.print("max grad norm:", max(grad_norms.values()))


if __name__ == "__main__":
    main()
