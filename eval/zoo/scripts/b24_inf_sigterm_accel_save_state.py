"""Image-caption retrieval head (two projection towers over precomputed features) with accelerate; tqdm bar on the
main process; accelerator.save_state every 100 steps."""
import torch
import torch.nn as nn
from accelerate import Accelerator
from tqdm.auto import tqdm


def main():
    acc = Accelerator(cpu=True)
    img = nn.Sequential(nn.Linear(768, 1536), nn.GELU(), nn.Linear(1536, 512))
    txt = nn.Sequential(nn.Linear(512, 1536), nn.GELU(), nn.Linear(1536, 512))
    model = nn.ModuleDict({"img": img, "txt": txt})
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(acc.process_index)
    bar = tqdm(range(1, 401), desc="train", disable=not acc.is_local_main_process)
    for step in bar:
        fi, ft = torch.randn(64, 768, generator=g), torch.randn(64, 512, generator=g)
        m = model.module if hasattr(model, "module") else model
        s = nn.functional.normalize(m["img"](fi), dim=-1) @ nn.functional.normalize(m["txt"](ft), dim=-1).T
        loss = (nn.functional.cross_entropy(s / 0.07, torch.arange(64)) +
                nn.functional.cross_entropy(s.T / 0.07, torch.arange(64))) / 2
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % 100 == 0:
            acc.print(f"saving state to checkpoints/cap-ret/step_{step}")
            acc.save_state(f"checkpoints/cap-ret/step_{step}")
            acc.print(f"saved state to checkpoints/cap-ret/step_{step}")
    acc.print("done")


if __name__ == "__main__":
    main()
