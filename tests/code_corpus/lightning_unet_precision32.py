"""Binary segmentation (e.g. cell nuclei) with a small U-Net in Lightning 2, kept in full precision."""
import glob
import os

import lightning as L
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset

L.seed_everything(7)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
torch.set_float32_matmul_precision("high")

loader_kwargs = dict(batch_size=16, num_workers=8, pin_memory=True, persistent_workers=True)


def double_conv(c_in, c_out):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
    )


class UNet(nn.Module):
    def __init__(self, channels=(32, 64, 128, 256)):
        super().__init__()
        self.downs = nn.ModuleList()
        c_prev = 3
        for c in channels:
            self.downs.append(double_conv(c_prev, c))
            c_prev = c
        self.ups = nn.ModuleList()
        self.up_convs = nn.ModuleList()
        for c in reversed(channels[:-1]):
            self.ups.append(nn.ConvTranspose2d(c_prev, c, 2, stride=2))
            self.up_convs.append(double_conv(2 * c, c))
            c_prev = c
        self.head = nn.Conv2d(c_prev, 1, 1)

    def forward(self, x):
        skips = []
        for i, down in enumerate(self.downs):
            x = down(x)
            if i < len(self.downs) - 1:
                skips.append(x)
                x = F.max_pool2d(x, 2)
        for up, conv, skip in zip(self.ups, self.up_convs, reversed(skips)):
            x = conv(torch.cat([up(x), skip], dim=1))
        return self.head(x)


class NucleiDataset(Dataset):
    def __init__(self, folder):
        self.images = sorted(glob.glob(os.path.join(folder, "images", "*.png")))

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        image = np.asarray(Image.open(self.images[i]).convert("RGB"), dtype=np.float32) / 255.0
        mask = np.asarray(Image.open(self.images[i].replace("images", "masks")), dtype=np.float32) / 255.0
        return torch.from_numpy(image).permute(2, 0, 1), torch.from_numpy(mask)[None]


class Segmenter(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = UNet()

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.binary_cross_entropy_with_logits(self.net(x), y)
        self.log("loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        pred = (self.net(x) > 0).float()
        dice = 2 * (pred * y).sum() / (pred.sum() + y.sum() + 1e-6)
        self.log("val_dice", dice, prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


train_loader = DataLoader(NucleiDataset("data/train"), shuffle=True, **loader_kwargs)
val_loader = DataLoader(NucleiDataset("data/val"), **loader_kwargs)

trainer = L.Trainer(
    accelerator="cuda",
    devices=1,
    precision="32",
    max_epochs=100,
    deterministic=True,
)
trainer.fit(Segmenter(), train_loader, val_loader)
