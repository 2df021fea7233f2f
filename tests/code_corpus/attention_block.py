"""Self-attention block of a vision transformer, in its own module; the model returns the
attention maps so that they can be plotted."""
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim, heads=8, attn_drop=0.1, proj_drop=0.1):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.attn_dropout = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_dropout = nn.Dropout(proj_drop)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        attn = self.attn_dropout(attn)
        out = (attn @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj_dropout(self.proj(out)), attn
