"""Fine-tune the team's small encoder (exported by the pretraining group to models/encoder-small) for review
sentiment with accelerate on 2 CPU processes (accelerate launch --config_file configs/accelerate_cpu.yaml)."""
import json

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from transformers import AutoConfig, AutoModelForSequenceClassification, PreTrainedTokenizerFast

acc = Accelerator(cpu=True)
acc.print(f"world size {acc.num_processes}, loading models/encoder-small")
tok = PreTrainedTokenizerFast.from_pretrained("./tok")
config = AutoConfig.from_pretrained("./models/encoder-small", num_labels=2)
model = AutoModelForSequenceClassification.from_pretrained("./models/encoder-small", config=config)
rows = [json.loads(line) for line in open("data/reviews.jsonl")]
enc = tok([r["text"] for r in rows], padding="max_length", truncation=True, max_length=24, return_tensors="pt")
ds = torch.utils.data.TensorDataset(enc["input_ids"], enc["attention_mask"], torch.tensor([r["y"] for r in rows]))
dl = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True)
opt = torch.optim.AdamW(model.parameters(), lr=3e-5)
model, opt, dl = acc.prepare(model, opt, dl)
for step, (ids, mask, y) in enumerate(dl):
    loss = F.cross_entropy(model(input_ids=ids, attention_mask=mask).logits, y)
    acc.backward(loss)
    opt.step()
    opt.zero_grad()
    if step % 10 == 0:
        acc.print(f"step {step} loss {loss.item():.4f}")
