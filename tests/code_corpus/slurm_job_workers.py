"""CIFAR-10 classifier whose loader workers follow the Slurm job: every way of reading the job's
CPUs people write, and one that forgets the environment gives strings."""

import argparse
import os
import time
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True

# The CPUs Slurm gave this task (--cpus-per-task), 4 outside a job.
CPUS = int(os.environ.get("SLURM_CPUS_PER_TASK", 4))


@dataclass
class LoaderConfig:
    batch_size: int = 512
    workers: int = field(default_factory=lambda: len(os.sched_getaffinity(0)))


def conv_bn(c_in, c_out, stride=1):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel_size=3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
    )


class SmallNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 64),
            conv_bn(64, 128, stride=2),
            conv_bn(128, 256, stride=2),
            conv_bn(256, 512, stride=2),
        )
        self.head = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


def gpu_augment(images):
    # Random flips and 4-pixel shifts, done on the GPU on the whole batch at once.
    n = images.size(0)
    flip = torch.rand(n, device=images.device) < 0.5
    images = torch.where(flip[:, None, None, None], images.flip(3), images)
    padded = F.pad(images, (4, 4, 4, 4), mode="reflect")
    dx, dy = torch.randint(0, 9, (2,), device=images.device).tolist()
    return padded[:, :, dy : dy + 32, dx : dx + 32]


def probe_loader(dataset, workers=int(os.getenv("SLURM_CPUS_PER_TASK", "4"))):
    return DataLoader(dataset, batch_size=256, num_workers=workers, pin_memory=True, persistent_workers=True, prefetch_factor=4)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    for images, labels in loader:
        images = images.to(device, non_blocking=True, memory_format=torch.channels_last)
        labels = labels.to(device, non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits = model(images)
        correct += (logits.argmax(1) == labels).sum().item()
        total += labels.numel()
    return correct / total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="./data")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--workers", type=int, default=os.environ.get("SLURM_CPUS_PER_TASK", 4))
    args = parser.parse_args()

    device = torch.device("cuda")
    to_tensor = transforms.Compose(
        [transforms.ToTensor(), transforms.Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26))]
    )
    train_set = datasets.CIFAR10(args.data, train=True, download=True, transform=to_tensor)
    test_set = datasets.CIFAR10(args.data, train=False, download=True, transform=to_tensor)

    config = LoaderConfig()
    train_loader = DataLoader(
        train_set,
        batch_size=config.batch_size,
        shuffle=True,
        num_workers=config.workers,
        pin_memory=True,
        persistent_workers=True,
        prefetch_factor=4,
        drop_last=True,
    )
    test_loader = DataLoader(
        test_set,
        batch_size=1024,
        num_workers=args.workers,
        pin_memory=True,
        persistent_workers=True,
        prefetch_factor=4,
    )
    eval_workers = os.environ.get("SLURM_CPUS_PER_TASK")
    extra_loader = DataLoader(test_set, batch_size=1024, num_workers=eval_workers, pin_memory=True, persistent_workers=True, prefetch_factor=4)
    side_loader = DataLoader(test_set, batch_size=1024, num_workers=CPUS, pin_memory=True, persistent_workers=True, prefetch_factor=4)
    probe = probe_loader(test_set)

    model = SmallNet().to(device, memory_format=torch.channels_last)
    try:
        model = torch.compile(model)
    except Exception as exc:  # compilation is best effort: fall back to eager mode
        print(f"torch.compile failed, running eagerly: {exc}")

    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, total_steps=args.epochs * len(train_loader)
    )

    for epoch in range(args.epochs):
        model.train()
        start = time.time()
        for images, labels in train_loader:
            images = images.to(device, non_blocking=True, memory_format=torch.channels_last)
            labels = labels.to(device, non_blocking=True)
            images = gpu_augment(images)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(images), labels, label_smoothing=0.1)
            loss.backward()
            optimizer.step()
            scheduler.step()
        accuracy = evaluate(model, test_loader, device)
        evaluate(model, extra_loader, device)
        evaluate(model, side_loader, device)
        evaluate(model, probe, device)
        print(f"epoch {epoch}: loss {loss.item():.3f} acc {accuracy:.3f} ({time.time() - start:.0f}s)")


if __name__ == "__main__":
    main()
