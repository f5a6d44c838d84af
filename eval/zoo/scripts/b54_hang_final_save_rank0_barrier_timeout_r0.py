"""Small GPT-style language model on DDP, 3 ranks. The process-group timeout is set short (20 s) so that a
stuck collective fails fast instead of burning the default 30 minutes. At the end of training rank 0 exports the
final model (fp16 weights, gzip-compressed, with a manifest of checksums) and the other ranks wait at a barrier for
the export before the job exits. On a collective error each rank writes its Flight Recorder trace."""
import datetime
import gzip
import hashlib
import io
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
VOCAB, DIM, CTX = 4096, 256, 64


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(CTX, DIM)
        layer = nn.TransformerEncoderLayer(DIM, 4, 4 * DIM, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, ids):
        h = self.tok(ids) + self.pos(torch.arange(ids.size(1)))
        mask = nn.Transformer.generate_square_subsequent_mask(ids.size(1))
        return self.head(self.blocks(h, mask=mask, is_causal=True))


model = DDP(TinyGPT())
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
tokens = torch.load(f"data/tokens-{rank}.pt")
print(f"rank {rank}: {tokens.numel()} tokens", flush=True)


def fr_dump():
    os.makedirs("fr", exist_ok=True)
    with open(f"fr/rank{rank}.trace", "wb") as f:
        f.write(torch._C._distributed_c10d._dump_fr_trace())
    print(f"rank {rank}: flight recorder trace saved to fr/rank{rank}.trace", flush=True)


def export_final(path):
    os.makedirs(path, exist_ok=True)
    manifest = {}
    for name, t in model.module.state_dict().items():
        buf = io.BytesIO()
        torch.save(t.half(), buf)
        raw = buf.getvalue()
        fn = name.replace(".", "_") + ".pt.gz"
        with gzip.open(os.path.join(path, fn), "wb", compresslevel=9) as f:
            f.write(raw * 160)  # 160 EMA / SWA variants of each tensor, for the evaluation sweep
        manifest[name] = {"file": fn, "sha256": hashlib.sha256(raw).hexdigest(), "shape": list(t.shape)}
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump(manifest, f)


try:
    STEPS = 30
    for step in range(1, STEPS + 1):
        i = torch.randint(0, tokens.numel() - CTX - 1, (8,))
        seq = torch.stack([tokens[j:j + CTX + 1] for j in i.tolist()])
        logits = model(seq[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), seq[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"rank {rank}: step {step}/{STEPS} loss {loss.item():.4f}", flush=True)
    print(f"{time.strftime('%H:%M:%S')} rank {rank}: training finished", flush=True)
    if rank == 0:
        t0 = time.time()
        print(f"{time.strftime('%H:%M:%S')} rank 0: exporting final model to export/final ...", flush=True)
        export_final("export/final")
        print(f"rank 0: export done in {time.time() - t0:.1f}s", flush=True)
    dist.barrier()
except Exception:
    fr_dump()
    raise
print(f"rank {rank}: exit", flush=True)
dist.destroy_process_group()
