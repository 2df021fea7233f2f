"""Datasets and loaders for the 64x64 image folders."""
import os

import torch
from torch.utils.data import DataLoader
from torchvision import datasets
from torchvision.transforms import v2 as T

MEAN, STD = [0.48, 0.45, 0.40], [0.27, 0.26, 0.28]


def train_transform(size=64):
    return T.Compose([
        T.RandomResizedCrop(size, scale=(0.35, 1.0), antialias=True),
        T.RandomHorizontalFlip(),
        T.TrivialAugmentWide(),
        T.ToImage(),
        T.ToDtype(torch.float32, scale=True),
        T.Normalize(MEAN, STD),
    ])


def eval_transform(size=64):
    return T.Compose([T.Resize(size), T.ToImage(), T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])


def make_loaders(root, batch_size, workers):
    train_set = datasets.ImageFolder(os.path.join(root, "train"), train_transform())
    val_set = datasets.ImageFolder(os.path.join(root, "val"), eval_transform())
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=workers, pin_memory=True, persistent_workers=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=batch_size, shuffle=False, num_workers=workers, pin_memory=True, persistent_workers=True)
    return train_loader, val_loader, len(train_set.classes)
