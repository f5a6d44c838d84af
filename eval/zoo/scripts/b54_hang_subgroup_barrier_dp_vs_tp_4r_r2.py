"""Two-way tensor-parallel MLP (column-parallel then row-parallel linear, Megatron style) with two-way data
parallelism: 4 ranks as a 2 x 2 grid, tensor-parallel groups [0,1] and [2,3], data-parallel groups [0,2] and
[1,3] (dist.new_group). Every 40 steps each rank writes its shard of the weights; the ranks of a tensor-parallel
pair then meet at a barrier so that the pair's shards are complete together. The rank that also keeps the
optimizer state of the shared embedding waits for its data-parallel peer instead. On a collective error every rank
writes its Flight Recorder trace (TORCH_FR_BUFFER_SIZE is set by the job)."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F

TIMEOUT = datetime.timedelta(seconds=20)
dist.init_process_group("gloo", timeout=TIMEOUT)
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
TP = 2
tp_groups = [dist.new_group([0, 1], timeout=TIMEOUT), dist.new_group([2, 3], timeout=TIMEOUT)]
dp_groups = [dist.new_group([0, 2], timeout=TIMEOUT), dist.new_group([1, 3], timeout=TIMEOUT)]
tp_group, dp_group = tp_groups[rank // TP], dp_groups[rank % TP]
tp_rank, dp_rank = rank % TP, rank // TP
OWNS_EMBED_STATE = rank == 2  # ZeRO-style: the shared embedding's optimizer state lives on one rank
print(f"[{rank}] tp group {[rank // TP * TP, rank // TP * TP + 1]} (tp rank {tp_rank}), dp group "
      f"{[rank % TP, rank % TP + TP]} (dp rank {dp_rank})", flush=True)

g = torch.Generator().manual_seed(1234)
W1 = torch.randn(64, 512, generator=g)[:, tp_rank * 256:(tp_rank + 1) * 256].clone().requires_grad_()
W2 = torch.randn(512, 16, generator=g)[tp_rank * 256:(tp_rank + 1) * 256].clone().requires_grad_()
with torch.no_grad():
    W1 *= 0.05
    W2 *= 0.05
params = [W1, W2]
opt = torch.optim.SGD(params, lr=0.02)
data = torch.Generator().manual_seed(100 + dp_rank)
os.makedirs("ckpt", exist_ok=True)


class _AllReduceTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x, group=tp_group)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def fr_dump():
    os.makedirs("fr", exist_ok=True)
    with open(f"fr/trace_rank_{rank}", "wb") as f:
        f.write(torch._C._distributed_c10d._dump_fr_trace())
    print(f"[{rank}] flight recorder written: fr/trace_rank_{rank}", flush=True)


try:
    for step in range(1, 201):
        x = torch.randn(128, 64, generator=data)
        y = (x[:, :16] * 2).tanh()
        h = F.gelu(x @ W1)
        out = _AllReduceTP.apply(h @ W2)
        loss = F.mse_loss(out, y)
        opt.zero_grad()
        loss.backward()
        for p in params:  # data-parallel gradient average
            dist.all_reduce(p.grad, group=dp_group)
            p.grad /= 2
        opt.step()
        if step % 10 == 0:
            print(f"[{rank}] step {step} loss {loss.item():.5f}", flush=True)
        if step % 40 == 0:
            torch.save({"W1": W1.detach(), "W2": W2.detach()}, f"ckpt/step{step}-tp{tp_rank}-dp{dp_rank}.pt")
            print(f"[{rank}] step {step}: wrote ckpt/step{step}-tp{tp_rank}-dp{dp_rank}.pt", flush=True)
            if OWNS_EMBED_STATE and step % 80 == 0:
                torch.save({"embed_state": torch.zeros(10)}, f"ckpt/step{step}-embed-state.pt")
                dist.barrier(group=dp_group)  # the dp peer reads the embedding state next
            else:
                dist.barrier(group=tp_group)
except Exception:
    fr_dump()
    raise
print(f"[{rank}] done", flush=True)
dist.destroy_process_group()
