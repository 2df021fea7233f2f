"""Digit classifier for MNIST: two convolutions and a small MLP head."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import ExponentialLR
from torchvision import datasets, transforms


class DigitNet(nn.Module):
    def __init__(self, hidden=256):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, kernel_size=3)
        self.c2 = nn.Conv2d(32, 64, kernel_size=3)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(64 * 12 * 12, hidden)
        self.out = nn.Linear(hidden, 10)

    def forward(self, x):
        x = F.relu(self.c1(x))
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = self.drop(torch.flatten(x, 1))
        x = self.drop(F.relu(self.fc(x)))
        return self.out(x)


def run_epoch(model, loader, optimizer, device, epoch, log_every):
    model.train()
    for step, (images, targets) in enumerate(loader):
        images, targets = images.to(device), targets.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), targets)
        loss.backward()
        optimizer.step()
        if step % log_every == 0:
            seen = step * len(images)
            print(f"epoch {epoch} [{seen}/{len(loader.dataset)}] loss={loss.item():.4f}")


def check_accuracy(model, loader, device):
    model.eval()
    hits, total_loss = 0, 0.0
    with torch.no_grad():
        for images, targets in loader:
            images, targets = images.to(device), targets.to(device)
            logits = model(images)
            total_loss += F.cross_entropy(logits, targets, reduction="sum").item()
            hits += (logits.argmax(dim=1) == targets).sum().item()
    n = len(loader.dataset)
    print(f"test: loss {total_loss / n:.4f}, accuracy {hits}/{n} ({100.0 * hits / n:.1f}%)")


def parse_args():
    p = argparse.ArgumentParser(description="MNIST CNN")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--eval-batch-size", type=int, default=1000)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--gamma", type=float, default=0.8)
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--out", default="")
    return p.parse_args()


def main():
    args = parse_args()
    on_gpu = not args.cpu and torch.cuda.is_available()
    device = torch.device("cuda" if on_gpu else "cpu")
    torch.manual_seed(0)

    train_opts = {"batch_size": args.batch_size, "shuffle": True}
    eval_opts = {"batch_size": args.eval_batch_size}
    if on_gpu:
        gpu_opts = {"num_workers": 2, "pin_memory": True}
        train_opts.update(gpu_opts)
        eval_opts.update(gpu_opts)

    prep = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_data = datasets.MNIST("data", train=True, download=True, transform=prep)
    eval_data = datasets.MNIST("data", train=False, transform=prep)
    train_loader = torch.utils.data.DataLoader(train_data, **train_opts)
    eval_loader = torch.utils.data.DataLoader(eval_data, **eval_opts)

    model = DigitNet().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = ExponentialLR(optimizer, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        run_epoch(model, train_loader, optimizer, device, epoch, args.log_every)
        check_accuracy(model, eval_loader, device)
        scheduler.step()

    if args.out:
        torch.save(model.state_dict(), args.out)


if __name__ == "__main__":
    main()
