"""Tiny transformer LM pretraining loop (4 ranks, gloo); rank 0 reports throughput only."""
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
    t0 = time.time()
    for step in range(1, 601):
        x = torch.randint(0, VOCAB, (BATCH, SEQ + 1))
        logits = model(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            tps = 10 * BATCH * SEQ * world / (time.time() - t0)
            if rank == 0:
                print(f"train | step {step:5d} | {tps:,.0f} tokens/s")
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
