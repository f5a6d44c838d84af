"""Keyword-spotting acoustic model (conv front-end + GRU) on log-mel frames, FSDP2 on 3 processes. Resumes from the
team's shared checkpoint volume (--resume, a DCP directory) and writes new checkpoints to --save-dir."""
import argparse
import datetime
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=400)
p.add_argument("--save-every", type=int, default=100)
p.add_argument("--save-dir", default="ckpt")
p.add_argument("--resume", default="")
args = p.parse_args()


class KWS(nn.Module):
    def __init__(self, n_mels=40, n_cls=12, d=256):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(n_mels, d, 5, padding=2), nn.ReLU(), nn.Conv1d(d, d, 5, padding=2),
                                   nn.ReLU())
        self.rnn = nn.GRU(d, d, num_layers=2, batch_first=True)
        self.head = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, n_cls))

    def forward(self, mel):  # (B, T, n_mels)
        h = self.front(mel.transpose(1, 2)).transpose(1, 2)
        out, _ = self.rnn(h)
        return self.head(out.mean(1))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (world,))
    model = KWS()
    fully_shard(model.front, mesh=mesh)
    fully_shard(model.rnn, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = 0
    if args.resume:
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd, "step": torch.tensor(0)}
        print(f"[rank{rank}] loading checkpoint {args.resume}", flush=True)
        dcp.load(state, checkpoint_id=args.resume)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        start = int(state["step"])
        print(f"[rank{rank}] resumed at step {start}", flush=True)
    g = torch.Generator().manual_seed(1000 * rank + start)
    t0 = time.time()
    for step in range(start + 1, args.steps + 1):
        y = torch.randint(0, 12, (32,), generator=g)
        mel = torch.randn(32, 49, 40, generator=g)
        mel[torch.arange(32), :, y * 3] += 1.5
        loss = F.cross_entropy(model(mel), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 20 == 0:
            print(f"[rank{rank}] step {step}/{args.steps} loss {loss.item():.4f} {time.time() - t0:.1f}s", flush=True)
        if step % args.save_every == 0:
            msd, osd = get_state_dict(model, opt)
            dcp.save({"model": msd, "optim": osd, "step": torch.tensor(step)},
                     checkpoint_id=f"{args.save_dir}/step_{step}")
            print(f"[rank{rank}] checkpoint {args.save_dir}/step_{step} written", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
