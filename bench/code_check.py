"""Check my training code on a 2,000-line program: the time of check_code (median and worst over
several runs) and the share of it that is Python's own parser (ast.parse), against the target of
100 ms per check.

The program is generated: many model classes (convolutions, batch norms, hand-written attention),
data loaders, training and evaluation loops, in the shapes people write them, so that every rule
has work to do. The checker is pure Python: no Django, no database.
Usage: .venv/bin/python bench/code_check.py [runs] [lines]   (default 30 runs of 2,000 lines)
"""

import ast
import os
import statistics
import sys
import time
from pathlib import Path

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 100
LINES = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000

HEADER = '''"""A generated training program for the code-check benchmark."""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.transforms as T
from torch.utils.data import DataLoader, Dataset

'''

BLOCK = '''

class Block{i}(nn.Module):
    """Convolutions, a batch norm and attention: block {i}."""

    def __init__(self, channels={c}, heads=4):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.qkv = nn.Linear(channels, channels * 3)
        self.proj = nn.Linear(channels, channels)
        self.heads = heads
        self.layers = nn.Sequential(
            nn.Conv2d(channels, channels, 1),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
        )

    def attention(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).unbind(2)
        scores = q @ k.transpose(-2, -1)
        scores = scores / math.sqrt(c // self.heads)
        weights = F.softmax(scores, dim=-1)
        return self.proj((weights @ v).reshape(b, n, c))

    def forward(self, x):
        y = self.bn1(self.conv1(x))
        y = F.relu(y)
        y = self.conv2(y)
        y = self.bn2(y)
        noise = torch.randn(y.shape).cuda()
        y = self.layers(y + 0.01 * noise)
        b, c, h, w = y.shape
        tokens = self.attention(y.flatten(2).transpose(1, 2))
        return y + tokens.transpose(1, 2).reshape(b, c, h, w)


class Data{i}(Dataset):
    def __init__(self, root, train=True):
        self.root = root
        self.items = list(range({n}))
        self.transform = T.Compose([
            T.RandomResizedCrop(224),
            T.RandomHorizontalFlip(),
            T.ToTensor(),
        ]) if train else T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return torch.zeros(3, 224, 224), index % 10


def loaders{i}(args):
    settings = dict(batch_size=64, pin_memory=True)
    train = DataLoader(Data{i}(args.root), shuffle=True, **settings)
    val = DataLoader(
        Data{i}(args.root, train=False),
        batch_size=args.batch_size,
        num_workers=args.workers,
    )
    return train, val


def evaluate{i}(model, loader, device):
    model.eval()
    correct = 0
    for images, labels in loader:
        images = images.to(device)
        correct += (model(images).argmax(1) == labels.to(device)).sum().item()
    return correct / max(1, len(loader.dataset))


def train{i}(model, loader, optimizer, device, epochs=2):
    model = nn.DataParallel(model)
    for epoch in range(epochs):
        model.train()
        for step, (images, labels) in enumerate(loader):
            images = images.to(device, non_blocking=True)
            loss = F.cross_entropy(model(images), labels.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 100 == 0:
                print(f"epoch {{epoch}} step {{step}} loss {{loss.item():.3f}}")
    return model
'''

MAIN = """

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    device = torch.device("cuda")
    model = Block0().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    train, val = loaders0(args)
    train0(model, train, optimizer, device)
    print(evaluate0(model, val, device))


if __name__ == "__main__":
    main()
"""


def program(lines: int = LINES) -> str:
    parts, i = [HEADER], 0
    while sum(p.count("\n") for p in parts) < lines - MAIN.count("\n"):
        parts.append(BLOCK.format(i=i, c=32 + i, n=1000 + i))
        i += 1
    return "".join(parts) + MAIN


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from guidance.engine import Cluster, Policy
    from guidance.engine.code_check import check_code

    cluster = Cluster(slug="dgx", name="DGX", policy=Policy(cpus_per_gpu=16))
    source = program()
    files = {"train.py": source}
    result = check_code(files, cluster)  # once before timing: imports and caches warm
    checks, cpu, parses = [], [], []
    for _ in range(RUNS):
        start, start_cpu = time.perf_counter(), time.process_time()
        check_code(files, cluster)
        checks.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
        start = time.perf_counter()
        ast.parse(source)
        parses.append((time.perf_counter() - start) * 1000)
    median, worst = statistics.median(checks), max(checks)
    share = statistics.median(parses) / median
    by_rule: dict[str, int] = {}
    for finding in result.findings:
        by_rule[finding.rule] = by_rule.get(finding.rule, 0) + 1
    rows = (
        ("program", f"{source.count(chr(10))} lines, {len(source.encode()) // 1000} kB"),
        ("runs", RUNS),
        ("check_code median", f"{median:.1f} ms"),
        ("check_code worst", f"{worst:.1f} ms"),
        ("check_code CPU", f"{statistics.median(cpu):.1f} ms median (time.process_time)"),
        ("ast.parse median", f"{statistics.median(parses):.1f} ms ({share:.0%} of a check)"),
        ("target", f"{TARGET_MS} ms: {'met' if median < TARGET_MS else 'MISSED'}"),
        ("findings", f"{len(result.findings)} ({len(result.changes)} changes)"),
        ("by rule", ", ".join(f"{rule} {count}" for rule, count in sorted(by_rule.items()))),
    )
    for label, value in rows:
        print(f"{label:20s} {value}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{'load average':20s} {load} ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
