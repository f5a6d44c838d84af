"""Small transformer language model (2 layers) on DDP, 2 ranks, checkpointed with torch.distributed.checkpoint (DCP).
Model size comes from configs/lm.json; resumes from the DCP directory given in the config."""
import datetime
import json

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel as DDP

cfg = json.load(open("configs/lm.json"))
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)


class LM(nn.Module):
    def __init__(self, vocab, d, ffn, layers):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(d, 4, ffn, dropout=0.0, batch_first=True) for _ in range(layers))
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        h = self.tok(x)
        for b in self.blocks:
            h = b(h)
        return self.out(h)


model = DDP(LM(cfg["vocab"], cfg["d_model"], cfg["ffn_dim"], cfg["layers"]))
opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
if rank == 0:
    print(f"config: {json.dumps(cfg)}", flush=True)
step0 = 0
if cfg.get("resume_from"):
    msd, osd = get_state_dict(model, opt)
    state = {"model": msd, "optim": osd, "step": 0}
    print(f"rank {rank}: loading DCP checkpoint {cfg['resume_from']}", flush=True)
    dcp.load(state, checkpoint_id=cfg["resume_from"])
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    step0 = state["step"]
    print(f"rank {rank}: resumed at step {step0}", flush=True)
g = torch.Generator().manual_seed(rank)
for step in range(step0 + 1, step0 + 201):
    x = torch.randint(0, cfg["vocab"], (8, 32), generator=g)
    logits = model(x[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), x[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"rank {rank}: step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
