import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    blob = torch.load("cache/tokenized_train.pt")  # produced by preprocess.py
    ds = TensorDataset(blob["input_ids"], blob["labels"])
    loader = DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds))
    emb = torch.nn.Embedding(1000, 32)
    model = DDP(torch.nn.Sequential(emb, torch.nn.Flatten(), torch.nn.Linear(32 * 16, 2)))
    opt = torch.optim.Adam(model.parameters())
    for ids, labels in loader:
        loss = torch.nn.functional.cross_entropy(model(ids), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == 0:
        print("epoch done", loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
