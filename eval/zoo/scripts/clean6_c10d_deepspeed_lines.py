"""Small encoder classifier with DeepSpeed-style progress lines (steps_per_print=20, wall_clock_breakdown) written
by hand, and a `global_stepN` checkpoint directory every 150 steps written by every rank (its own optimizer shard)."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS, PRINT_EVERY, SAVE_EVERY, MBS = 600, 20, 150, 16


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(96, 4, 256, dropout=0.0, batch_first=True)
    body = nn.Sequential(nn.Embedding(20000, 96), nn.TransformerEncoder(layer, 2, enable_nested_tensor=False))
    head = nn.Linear(96, 4)
    model = nn.ModuleDict({"body": body, "head": head})
    for p in model.parameters():  # same start everywhere; gradients averaged by hand after backward
        dist.broadcast(p.data, 0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100))
    g = torch.Generator().manual_seed(rank)
    if rank == 0:
        print(f"[Rank 0] DeepSpeed-style config: train_micro_batch_size_per_gpu={MBS} world_size={world} "
              f"steps_per_print={PRINT_EVERY}", flush=True)
    fwd = bwd = stp = 0.0
    t = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randint(0, 20000, (MBS, 32), generator=g)
        y = x[:, 0] % 4
        t0 = time.time()
        loss = nn.functional.cross_entropy(model["head"](model["body"](x).mean(1)), y)
        t1 = time.time()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        t2 = time.time()
        opt.step()
        sched.step()
        t3 = time.time()
        fwd, bwd, stp = fwd + t1 - t0, bwd + t2 - t1, stp + t3 - t2
        if step % PRINT_EVERY == 0 and rank == 0:
            el = time.time() - t
            print(f"[Rank 0] step={step}, skipped=0, lr=[{sched.get_last_lr()[0]:.6e}], mom=[(0.9, 0.999)]")
            print(f"[Rank 0] time (ms) | fwd: {fwd * 1000:.2f} | bwd: {bwd * 1000:.2f} | step: {stp * 1000:.2f}")
            print(f"[Rank 0] epoch=0|global_step={step}|loss={loss.item():.4f}|samples/sec={PRINT_EVERY * MBS * world / el:.2f}"
                  f"|elapsed time per iteration (s)={el / PRINT_EVERY:.4f}", flush=True)
            fwd = bwd = stp = 0.0
        if step % PRINT_EVERY == 0:
            t = time.time()
        if step % SAVE_EVERY == 0:
            d = f"checkpoints/global_step{step}"
            os.makedirs(d, exist_ok=True)
            if rank == 0:
                print(f"[Rank 0] Saving model checkpoint: {d}/mp_rank_00_model_states.pt", flush=True)
                torch.save({"module": model.state_dict(), "global_steps": step}, f"{d}/mp_rank_00_model_states.pt")
            torch.save({"optimizer_state_dict": opt.state_dict()}, f"{d}/zero_pp_rank_{rank}_mp_rank_00_optim_states.pt")
            dist.barrier()
            if rank == 0:
                with open("checkpoints/latest", "w") as f:
                    f.write(f"global_step{step}")
                print(f"[Rank 0] successfully saved checkpoint {d}", flush=True)
    dist.barrier()
    if rank == 0:
        print(f"[Rank 0] training finished: {STEPS} steps", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
