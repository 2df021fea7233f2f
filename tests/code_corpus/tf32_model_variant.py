"""Character-level language model on a text file: a Transformer or a GRU, picked by --arch.
The Transformer variant turns TF32 on in its own constructor, so a GRU run never gets it."""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class TransformerLM(nn.Module):
    def __init__(self, vocab, width=384, depth=6, heads=6, context=256):
        super().__init__()
        torch.backends.cuda.matmul.allow_tf32 = True
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Parameter(torch.zeros(1, context, width))
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        n = tokens.size(1)
        causal = nn.Transformer.generate_square_subsequent_mask(n, device=tokens.device)
        x = self.embed(tokens) + self.position[:, :n]
        return self.head(self.blocks(x, mask=causal, is_causal=True))


class GRULM(nn.Module):
    def __init__(self, vocab, width=512, depth=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.rnn = nn.GRU(width, width, depth, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        out, _ = self.rnn(self.embed(tokens))
        return self.head(out)


def batches(data, context, batch_size, device):
    while True:
        starts = torch.randint(len(data) - context - 1, (batch_size,), device=device)
        offsets = torch.arange(context + 1, device=device)
        window = data[starts[:, None] + offsets]
        yield window[:, :-1], window[:, 1:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("text")
    parser.add_argument("--arch", choices=["transformer", "gru"], default="transformer")
    parser.add_argument("--steps", type=int, default=5000)
    args = parser.parse_args()

    device = torch.device("cuda")
    raw = open(args.text, "rb").read()
    data = torch.tensor(list(raw), dtype=torch.long, device=device)

    if args.arch == "transformer":
        model = TransformerLM(256)
    else:
        model = GRULM(256)
    model = torch.compile(model.to(device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)

    stream = batches(data, 256, 64, device)
    for step in range(args.steps):
        x, y = next(stream)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 500 == 0:
            print(f"step {step}: {loss.item() / math.log(2):.3f} bits per character")


if __name__ == "__main__":
    main()
