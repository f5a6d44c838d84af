"""Token tagger (BiGRU) for part-of-speech tags, trained with accelerate's Accelerator (launched by torchrun). The loss is a soft-F1-style objective on
the softmax probabilities; padding positions (label -100) are zeroed out of the probabilities before the loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator

acc = Accelerator(cpu=True)
rank = acc.process_index
torch.manual_seed(0)
torch.set_num_threads(1)
N_TAGS, VOCAB = 17, 3000


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64)
        self.rnn = nn.GRU(64, 64, batch_first=True, bidirectional=True)
        self.out = nn.Linear(128, N_TAGS)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def soft_f1_loss(logits, labels):
    probs = torch.softmax(logits, dim=-1)
    pad = labels == -100
    if pad.any():
        probs[pad] = 0.0  # padding positions do not count
    target = F.one_hot(labels.clamp(min=0), N_TAGS).float()
    target[pad] = 0.0
    tp = (probs * target).sum((0, 1))
    fp = (probs * (1 - target)).sum((0, 1))
    fn = ((1 - probs) * target).sum((0, 1))
    return 1 - (2 * tp / (2 * tp + fp + fn + 1e-6)).mean()


# this rank's shard of the treebank: rank 0's sentences were cut to a fixed 32 tokens at export; the other shards
# keep their natural lengths and are padded per batch
g = torch.Generator().manual_seed(rank)
batches = []
for b in range(30):
    x = torch.randint(1, VOCAB, (16, 32), generator=g)
    y = torch.randint(0, N_TAGS, (16, 32), generator=g)
    if rank != 0:
        lens = torch.randint(8, 33, (16,), generator=g)
        mask = torch.arange(32)[None, :] >= lens[:, None]
        x[mask], y[mask] = 0, -100
    batches.append((x, y))

model = Tagger()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
model, opt = acc.prepare(model, opt)
acc.print(f"training on {acc.num_processes} processes")
for step, (x, y) in enumerate(batches):
    loss = soft_f1_loss(model(x), y)
    opt.zero_grad()
    acc.backward(loss)
    opt.step()
    if step % 5 == 0:
        print(f"[proc {rank}] step {step} loss {loss.item():.4f}", flush=True)
acc.wait_for_everyone()
acc.print("done")
