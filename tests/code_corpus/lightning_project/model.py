"""A small decoder-only language model as a LightningModule."""
import math

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim, heads, max_len):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.out = nn.Linear(dim, dim)
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(~self.causal[:t, :t], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return self.out(torch.matmul(weights, v).transpose(1, 2).reshape(b, t, d))


class DecoderBlock(nn.Module):
    def __init__(self, dim, heads, max_len):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads, max_len)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.ff(self.norm2(x))


class TinyLM(L.LightningModule):
    def __init__(self, vocab=32000, dim=512, depth=8, heads=8, max_len=512, lr=6e-4):
        super().__init__()
        self.save_hyperparameters()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(1, max_len, dim))
        self.blocks = nn.ModuleList(DecoderBlock(dim, heads, max_len) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.tok(ids) + self.pos[:, : ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.norm(x))

    def training_step(self, batch, batch_idx):
        ids = batch
        logits = self(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        ids = batch
        logits = self(ids[:, :-1])
        self.log("val_loss", F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1)))

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, betas=(0.9, 0.95), weight_decay=0.1)
