"""Denoising diffusion on MNIST with a small MLP denoiser, class-conditional sampling at the end."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

device = torch.device("cuda")
STEPS = 1000


def timestep_embedding(t, dim: int, max_period: int = 10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half).to(t.device)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def noise_schedule(steps, beta_start=1e-4, beta_end=0.02):
    betas = torch.linspace(beta_start, beta_end, steps)
    alphas_cumprod = torch.cumprod(1.0 - torch.linspace(beta_start, beta_end, steps), dim=0).to(device)
    return betas.to(device), alphas_cumprod


def make_noise(n):
    return torch.randn(n, 28 * 28)


class Denoiser(nn.Module):
    def __init__(self, classes=10, width=512, tdim=128):
        super().__init__()
        self.tdim = tdim
        self.label = nn.Embedding(classes, tdim)
        self.net = nn.Sequential(
            nn.Linear(28 * 28 + tdim, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU(), nn.Linear(width, 28 * 28)
        )

    def forward(self, x, t, y):
        h = timestep_embedding(t, self.tdim) + self.label(y)
        return self.net(torch.cat([x, h], dim=1))


def sample(model, alphas_cumprod, per_class=8, classes=10):
    model.eval()
    images = []
    for i in range(classes):
        y = (torch.ones(per_class) * i).long().to(device)
        x = make_noise(per_class).to(device)
        for step in reversed(range(STEPS)):
            t = torch.full((per_class,), step, device=device)
            a = alphas_cumprod[step]
            with torch.no_grad():
                eps = model(x, t, y)
            x = (x - (1 - a).sqrt() * eps) / a.sqrt()
        images.append(x.view(-1, 1, 28, 28).cpu())
    return torch.cat(images)


def main():
    tf = transforms.Compose([transforms.ToTensor(), transforms.Lambda(lambda img: img.view(-1) * 2 - 1)])
    data = datasets.MNIST("data", train=True, download=True, transform=tf)
    loader = DataLoader(data, batch_size=256, shuffle=True, num_workers=16, pin_memory=True, persistent_workers=True, prefetch_factor=4)
    model = Denoiser().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)
    _, alphas_cumprod = noise_schedule(STEPS)
    for epoch in range(20):
        model.train()
        for x0, y in loader:
            x0, y = x0.to(device, non_blocking=True), y.to(device, non_blocking=True)
            t = (torch.rand(x0.size(0)) * STEPS).long().cuda()
            noise = torch.randn_like(x0)
            a = alphas_cumprod[t][:, None]
            xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
            loss = F.mse_loss(model(xt, t, y), noise)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        print(epoch, loss.item())
    torch.save(sample(model, alphas_cumprod), "samples.pt")


if __name__ == "__main__":
    main()
