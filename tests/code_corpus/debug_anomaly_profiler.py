"""Hunting a NaN in a small VAE on MNIST: anomaly detection and profiler left switched on."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--profile", action="store_true")
args = parser.parse_args()

torch.autograd.set_detect_anomaly(True)
device = torch.device("cuda")


class VAE(nn.Module):
    def __init__(self, latent=20):
        super().__init__()
        self.enc = nn.Linear(784, 400)
        self.mu = nn.Linear(400, latent)
        self.logvar = nn.Linear(400, latent)
        self.dec1 = nn.Linear(latent, 400)
        self.dec2 = nn.Linear(400, 784)

    def forward(self, x):
        h = F.relu(self.enc(x.view(-1, 784)))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return torch.sigmoid(self.dec2(F.relu(self.dec1(z)))), mu, logvar


def vae_loss(recon, x, mu, logvar):
    bce = F.binary_cross_entropy(recon, x.view(-1, 784), reduction="sum")
    return bce - 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())


data = datasets.MNIST("data", train=True, download=True, transform=transforms.ToTensor())
loader = DataLoader(data, batch_size=128, shuffle=True, num_workers=2, pin_memory=False)

model = VAE().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def train_epoch(epoch):
    model.train()
    total = 0.0
    for x, _ in loader:
        x = x.to(device)
        optimizer.zero_grad()
        recon, mu, logvar = model(x)
        loss = vae_loss(recon, x, mu, logvar)
        loss.backward()
        if not torch.isfinite(loss):
            raise RuntimeError(f"loss became {loss.item()} in epoch {epoch}")
        optimizer.step()
        total += loss.item()
    return total / len(loader.dataset)


with torch.autograd.profiler.profile(use_cuda=True, record_shapes=True) as prof:
    train_epoch(0)
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15))

for epoch in range(1, args.epochs):
    with torch.autograd.profiler.profile(enabled=args.profile) as epoch_prof:
        with torch.autograd.profiler.emit_nvtx():
            loss = train_epoch(epoch)
    print(f"epoch {epoch}: loss {loss:.2f}")
    if args.profile:
        epoch_prof.export_chrome_trace(f"trace_{epoch}.json")

with torch.autograd.detect_anomaly():
    model(torch.rand(16, 1, 28, 28).to(device))[0].sum().backward()
torch.autograd.set_detect_anomaly(False)
