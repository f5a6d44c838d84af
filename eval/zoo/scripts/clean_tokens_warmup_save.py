"""Tiny transformer LM pretraining (3 ranks, gloo): the first steps are slow while the allocator and the
data cache warm up; throughput-only logging; the final weights saved at the end."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn

SEQ, BATCH, VOCAB = 64, 8, 512


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 96)
        layer = nn.TransformerEncoderLayer(96, 4, 192, batch_first=True, dropout=0.0)
        self.body = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(96, VOCAB)

    def forward(self, x):
        return self.head(self.body(self.emb(x), is_causal=True, mask=nn.Transformer.generate_square_subsequent_mask(SEQ)))


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    # packed sequences are built lazily from the token stream on first use
    stream = torch.randint(0, VOCAB, (400_000,))
    packed = {}
    t0 = time.time()
    for step in range(1, 501):
        k = step % 250
        if k not in packed:
            idx = torch.randint(0, len(stream) - SEQ - 1, (BATCH,))
            packed[k] = torch.stack([stream[i:i + SEQ + 1] for i in idx.tolist()])
            # dedup check against everything packed so far (only while the cache fills)
            seen = torch.cat(list(packed.values()))
            _ = torch.unique(seen, dim=0)
        x = packed[k]
        loss = nn.functional.cross_entropy(model(x[:, :-1]).reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            tps = 10 * BATCH * SEQ * world / (time.time() - t0)
            if rank == 0:
                print(f"train | step {step:5d} | {tps:,.0f} tokens/s")
            t0 = time.time()
    if rank == 0:
        torch.save(model.module.state_dict(), "final_model.pt")
        print("saved final_model.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
