"""Embed a JSONL corpus with a sentence encoder and save the vectors as a .npy file."""
import argparse
import json

import numpy as np
import torch
from torch.utils.data import DataLoader
from transformers import AutoModel, AutoTokenizer

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="sentence-transformers/all-mpnet-base-v2")
parser.add_argument("--input", required=True)
parser.add_argument("--output", default="embeddings.npy")
parser.add_argument("--batch-size", type=int, default=256)
args = parser.parse_args()

device = "cuda"
tokenizer = AutoTokenizer.from_pretrained(args.model)
model = AutoModel.from_pretrained(args.model).to(device)
model.half()

with open(args.input) as fh:
    texts = [json.loads(line)["text"] for line in fh]


def collate(batch):
    enc = tokenizer(batch, padding=True, truncation=True, max_length=384)
    return {k: torch.tensor(v, dtype=torch.long).to(device) for k, v in enc.items()}


loader = DataLoader(texts, batch_size=args.batch_size, collate_fn=collate)

model.eval()
chunks = []
for batch in loader:
    out = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(out.dtype)
    pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    chunks.append(torch.nn.functional.normalize(pooled, dim=-1).float().cpu().numpy())

np.save(args.output, np.concatenate(chunks))
print(f"saved {sum(len(c) for c in chunks)} vectors to {args.output}")
