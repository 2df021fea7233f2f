"""Compute per-channel mean and standard deviation of an image dataset (no model, no training),
to paste into the Normalize() of the training script."""
import sys

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

root = sys.argv[1] if len(sys.argv) > 1 else "data/train"
device = "cuda" if torch.cuda.is_available() else "cpu"
dataset = datasets.ImageFolder(root, transform=transforms.Compose([transforms.Resize((224, 224)), transforms.ToTensor()]))
loader = DataLoader(dataset, batch_size=64, shuffle=False, num_workers=0)

channel_sum = torch.zeros(3).to(device)
channel_sq_sum = torch.zeros(3).to(device)
pixels = 0
for images, _ in loader:
    images = images.to(device)
    channel_sum += images.sum(dim=(0, 2, 3))
    channel_sq_sum += (images**2).sum(dim=(0, 2, 3))
    pixels += images.numel() // 3

mean = channel_sum / pixels
std = (channel_sq_sum / pixels - mean**2).sqrt()
print("mean:", [round(v, 4) for v in mean.tolist()])
print("std: ", [round(v, 4) for v in std.tolist()])
