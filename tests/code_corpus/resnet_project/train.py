"""Entry point: python train.py --data /data/tiny-imagenet --workers 8"""
import argparse

import torch
import torch.nn as nn

from data import make_loaders
from model import ResNet64


def evaluate(model, loader, device):
    model.eval()
    correct = 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            correct += (model(x).argmax(1) == y).sum().item()
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--lr", type=float, default=2e-3)
    args = parser.parse_args()

    device = torch.device("cuda")
    train_loader, val_loader, n_classes = make_loaders(args.data, args.batch_size, args.workers)
    model = ResNet64(n_classes).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    for epoch in range(args.epochs):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            optimizer.zero_grad()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: val accuracy {evaluate(model, val_loader, device):.3f}")
        torch.save(model.state_dict(), "resnet64.pt")


if __name__ == "__main__":
    main()
