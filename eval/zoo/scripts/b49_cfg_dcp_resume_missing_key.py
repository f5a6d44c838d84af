"""Character-level LM pretraining with FSDP2 and torch.distributed.checkpoint (DCP): resumes from --resume (a DCP
directory written by any earlier run, on any number of processes: DCP reshards on load), saves every --save-every
steps under ckpt/step_<N>."""
import argparse
import datetime
import os
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
p.add_argument("--steps", type=int, default=600)
p.add_argument("--save-every", type=int, default=200)
p.add_argument("--resume", default="")
p.add_argument("--learned-pos", action=argparse.BooleanOptionalAction, default=True)
args = p.parse_args()

VOCAB, CTX, D = 96, 64, 192


class CharLM(nn.Module):
    def __init__(self, learned_pos):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos_emb = nn.Parameter(torch.zeros(CTX, D)) if learned_pos else None
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(D, 4, 4 * D, batch_first=True, norm_first=True)
                                    for _ in range(3))
        self.head = nn.Linear(D, VOCAB)

    def forward(self, idx):
        x = self.tok(idx)
        if self.pos_emb is not None:
            x = x + self.pos_emb[: idx.shape[1]]
        mask = nn.Transformer.generate_square_subsequent_mask(idx.shape[1])
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=True)
        return self.head(x)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (world,))
    model = CharLM(args.learned_pos)
    for layer in model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    start = 0
    if args.resume:
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd, "step": torch.tensor(0)}
        if rank == 0:
            print(f"resuming from {args.resume} on {world} ranks", flush=True)
        dcp.load(state, checkpoint_id=args.resume)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        start = int(state["step"])
        if rank == 0:
            print(f"resumed at step {start}", flush=True)
    text = open("corpus.txt").read()
    data = torch.tensor([min(ord(c) - 32, VOCAB - 1) for c in text if 32 <= ord(c) < 128])
    g = torch.Generator().manual_seed(rank + start)
    t0 = time.time()
    for step in range(start + 1, args.steps + 1):
        i = torch.randint(0, len(data) - CTX - 1, (16,), generator=g)
        batch = torch.stack([data[j:j + CTX + 1] for j in i])
        loss = F.cross_entropy(model(batch[:, :-1]).reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 20 == 0 and rank == 0:
            print(f"step {step}/{args.steps} loss {loss.item():.4f} {time.time() - t0:.1f}s", flush=True)
        if step % args.save_every == 0:
            msd, osd = get_state_dict(model, opt)
            dcp.save({"model": msd, "optim": osd, "step": torch.tensor(step)}, checkpoint_id=f"ckpt/step_{step}")
            if rank == 0:
                print(f"saved ckpt/step_{step}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
