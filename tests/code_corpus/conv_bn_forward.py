"""Denoising classifier for 96x96 STL-10 crops: conv layers wired up in forward()."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data_utils
from torchvision import datasets, transforms


class Encoder(nn.Module):
    def __init__(self, width=64, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width * 2, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(width * 2)
        self.conv3 = nn.Conv2d(width * 2, width * 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.bn3 = nn.BatchNorm2d(width * 4)
        self.fc = nn.Linear(width * 4, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.pool(self.conv3(x))))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


@torch.inference_mode()
def evaluate(model, loader, device):
    model.eval()
    correct = 0
    for images, labels in loader:
        logits = model(images.to(device))
        correct += (logits.argmax(1).cpu() == labels).sum().item()
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument("--epochs", type=int, default=40)
    args = parser.parse_args()

    torch.set_float32_matmul_precision("high")
    device = torch.device("cuda")
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.45,) * 3, (0.25,) * 3)])
    train_set = datasets.STL10("data", split="train", download=True, transform=tf)
    test_set = datasets.STL10("data", split="test", download=True, transform=tf)
    train_loader = data_utils.DataLoader(train_set, batch_size=128, shuffle=True, num_workers=0)
    test_loader = data_utils.DataLoader(test_set, batch_size=256, num_workers=8, pin_memory=True, persistent_workers=True, prefetch_factor=4)

    model = Encoder().to(device)
    model = torch.compile(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)

    for epoch in range(args.epochs):
        model.train()
        for images, labels in train_loader:
            images, labels = images.to(device), labels.to(device)
            noise = torch.randn(images.size()).cuda() * args.noise
            weights = torch.ones(10).to(device)
            loss = F.cross_entropy(model(images + noise), labels, weight=weights)
            optimizer.zero_grad(set_to_none=False)
            loss.backward()
            optimizer.step()
        print(epoch, evaluate(model, test_loader, device))


if __name__ == "__main__":
    main()
