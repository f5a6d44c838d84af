"""Small causal LM (2-layer transformer) pre-training, DDP over gloo, 3 processes; rank 0 prints a fixed-width
progress table every 20 steps (step, loss, lr, step time, tokens/s over the job)."""
import math
import time

import torch
import torch.distributed as dist
import torch.nn as nn

VOCAB, SEQ, BS, STEPS = 2000, 32, 16, 600


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64)
        layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
        self.body = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(64, VOCAB)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        return self.head(self.body(self.emb(x), mask=mask, is_causal=True))


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(LM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100) * 0.5 * (1 + math.cos(math.pi * s / STEPS)))
    g = torch.Generator().manual_seed(rank)
    if rank == 0:
        print(f"{'step':>6} | {'loss':>8} | {'lr':>8} | {'step_ms':>8} | {'tok/s':>8}", flush=True)
        print("-" * 50, flush=True)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randint(0, VOCAB, (BS, SEQ + 1), generator=g)
        logits = model(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 20 == 0 and rank == 0:
            dt = (time.time() - t0) / 20
            print(f"{step:6d} | {loss.item():8.4f} | {sched.get_last_lr()[0]:.2e} | {dt * 1000:8.1f} | "
                  f"{BS * SEQ * world / dt:8.0f}", flush=True)
            t0 = time.time()
    dist.barrier()
    if rank == 0:
        print("finished", STEPS, "steps", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
