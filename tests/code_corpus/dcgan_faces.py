"""DCGAN on 64x64 face crops (CelebA-style image folder)."""
import argparse
import os
import random

import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
import torch.optim as optim
import torchvision.datasets as dset
import torchvision.transforms as transforms
import torchvision.utils as vutils
from torch.utils import data

parser = argparse.ArgumentParser()
parser.add_argument("--dataroot", required=True)
parser.add_argument("--ngpu", type=int, default=1)
parser.add_argument("--epochs", type=int, default=25)
parser.add_argument("--outf", default="samples")
opt = parser.parse_args()

nz, ngf, ndf, nc = 100, 64, 64, 3
seed = random.randint(1, 10000)
random.seed(seed)
torch.manual_seed(seed)
cudnn.benchmark = True
device = torch.device("cuda:0")

dataset = dset.ImageFolder(
    root=opt.dataroot,
    transform=transforms.Compose([
        transforms.Resize(64),
        transforms.CenterCrop(64),
        transforms.ToTensor(),
        transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
    ]),
)
dataloader = data.DataLoader(dataset, batch_size=128, shuffle=True, num_workers=12, pin_memory=True, persistent_workers=True, prefetch_factor=4)


def weights_init(m):
    name = m.__class__.__name__
    if name.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif name.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, 1, 8, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.main(x).view(-1)


netG = Generator().to(device)
netD = Discriminator().to(device)
if opt.ngpu > 1:
    netG = torch.nn.DataParallel(netG, list(range(opt.ngpu)))
    netD = torch.nn.DataParallel(netD, list(range(opt.ngpu)))
netG.apply(weights_init)
netD.apply(weights_init)

criterion = nn.BCELoss()
fixed_noise = torch.randn(64, nz, 1, 1, device=device)
optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
os.makedirs(opt.outf, exist_ok=True)

for epoch in range(opt.epochs):
    for i, (real, _) in enumerate(dataloader):
        real = real.to(device)
        b = real.size(0)

        netD.zero_grad()
        label = torch.full((b,), 1.0, dtype=torch.float).to(device)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        noise = torch.randn(b, nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(0.0)
        errD_fake = criterion(netD(fake.detach()), label)
        errD_fake.backward()
        optimizerD.step()

        netG.zero_grad()
        label.fill_(1.0)
        errG = criterion(netD(fake), label)
        errG.backward()
        optimizerG.step()

        if i % 100 == 0:
            print(f"[{epoch}/{opt.epochs}][{i}/{len(dataloader)}] D {(errD_real + errD_fake).item():.3f} G {errG.item():.3f}")
    with torch.no_grad():
        vutils.save_image(netG(fixed_noise).detach(), f"{opt.outf}/fake_epoch_{epoch:03d}.png", normalize=True)
