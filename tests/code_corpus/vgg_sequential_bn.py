"""VGG-11 with batch norm, trained on Tiny ImageNet (64x64, 200 classes)."""
import os
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader as DL
from torchvision import datasets
from torchvision import transforms as T

CFG = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]


def make_layers(cfg):
    layers = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            layers += [nn.Conv2d(in_channels, v, kernel_size=3, padding=1), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


class VGG11(nn.Module):
    def __init__(self, num_classes=200):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 3, kernel_size=1),
            nn.BatchNorm2d(3),
            nn.ReLU(inplace=True),
        )
        self.features = make_layers(CFG)
        self.extra = nn.Sequential(
            nn.Conv2d(512, 512, kernel_size=1, bias=True),
            nn.BatchNorm2d(512),
            nn.ReLU(inplace=True),
            nn.Conv2d(512, 512, kernel_size=1),
            nn.ReLU(inplace=True),
            nn.BatchNorm2d(512),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(512 * 2 * 2, 1024),
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
            nn.Linear(1024, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.extra(self.features(self.stem(x))))


@torch.no_grad()
def validate(model, loader, device):
    model.eval()
    correct = 0
    for x, y in loader:
        x = x.to(device, memory_format=torch.channels_last, non_blocking=True)
        y = y.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            correct += (model(x).argmax(1) == y).sum().item()
    return correct / len(loader.dataset)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.expanduser("~/data/tiny-imagenet-200"))
    ap.add_argument("--epochs", type=int, default=60)
    args = ap.parse_args()

    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = torch.device("cuda")

    tf = T.Compose([T.ToTensor(), T.Normalize([0.480, 0.448, 0.398], [0.277, 0.269, 0.282])])
    train_set = datasets.ImageFolder(os.path.join(args.root, "train"), transform=tf)
    val_set = datasets.ImageFolder(os.path.join(args.root, "val"), transform=tf)
    train_loader = DL(train_set, batch_size=256, shuffle=True, num_workers=16, pin_memory=True, persistent_workers=True, prefetch_factor=4)
    val_loader = DL(val_set, batch_size=512, num_workers=16, pin_memory=True, persistent_workers=True, prefetch_factor=4)

    model = VGG11().to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        model.train()
        for x, y in train_loader:
            x = x.to(device, memory_format=torch.channels_last, non_blocking=True)
            y = y.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: val acc {validate(model, val_loader, device):.3f}")


if __name__ == "__main__":
    main()
