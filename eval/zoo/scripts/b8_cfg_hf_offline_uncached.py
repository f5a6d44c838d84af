"""Fine-tune a small BERT classifier on support tickets with accelerate."""
import torch
from accelerate import Accelerator
from transformers import AutoModelForSequenceClassification, AutoTokenizer

MODEL = "google/bert_uncased_L-2_H-128_A-2"


def main():
    acc = Accelerator(cpu=True)
    acc.print(f"loading {MODEL}")
    tok = AutoTokenizer.from_pretrained(MODEL)
    model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=5)
    texts = ["printer not working", "cannot log in", "refund please", "app crashes on start"] * 64
    enc = tok(texts, padding=True, return_tensors="pt")
    labels = torch.arange(len(texts)) % 5
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5)
    model, opt = acc.prepare(model, opt)
    for step in range(0, len(texts), 16):
        out = model(input_ids=enc["input_ids"][step:step + 16], attention_mask=enc["attention_mask"][step:step + 16],
                    labels=labels[step:step + 16])
        acc.backward(out.loss)
        opt.step()
        opt.zero_grad()
        acc.print(f"step {step // 16} loss {out.loss.item():.4f}")


if __name__ == "__main__":
    main()
