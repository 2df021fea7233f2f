"""Denoising autoencoder for 64x64 images where only the encoder was wrapped in torch.compile,
inside the model's constructor: the decoder and the loss run uncompiled."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True


def down(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 4, stride=2, padding=1), nn.SiLU())


def up(c_in, c_out):
    return nn.Sequential(
        nn.ConvTranspose2d(c_in, c_out, 4, stride=2, padding=1), nn.SiLU()
    )


class Encoder(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.layers = nn.Sequential(
            down(3, width), down(width, 2 * width), down(2 * width, 4 * width)
        )

    def forward(self, x):
        return self.layers(x)


class DenoisingAutoencoder(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.encoder = torch.compile(Encoder(width))
        self.decoder = nn.Sequential(
            up(4 * width, 2 * width),
            up(2 * width, width),
            nn.ConvTranspose2d(width, 3, 4, 2, 1),
        )

    def forward(self, x):
        return self.decoder(self.encoder(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--noise", type=float, default=0.2)
    args = parser.parse_args()

    device = torch.device("cuda")
    images = datasets.ImageFolder(
        args.data,
        transforms.Compose(
            [transforms.Resize(64), transforms.CenterCrop(64), transforms.ToTensor()]
        ),
    )
    loader = DataLoader(
        images,
        batch_size=128,
        shuffle=True,
        num_workers=16,
        pin_memory=True,
        persistent_workers=True,
        prefetch_factor=4,
    )

    model = DenoisingAutoencoder().to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)

    for epoch in range(args.epochs):
        for clean, _ in loader:
            clean = clean.to(
                device, non_blocking=True, memory_format=torch.channels_last
            )
            noisy = clean + args.noise * torch.randn_like(clean)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = F.mse_loss(model(noisy), clean)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: reconstruction loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
