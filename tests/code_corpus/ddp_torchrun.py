"""Multi-GPU ResNet-18 on CIFAR-100 with DistributedDataParallel.

    torchrun --standalone --nproc_per_node=8 ddp_torchrun.py --epochs 100
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, models, transforms


def setup():
    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    return local_rank


def build_loader(root, batch_size, train):
    if train:
        tf = transforms.Compose([
            transforms.RandomHorizontalFlip(),
            transforms.RandomCrop(32, padding=4),
            transforms.ToTensor(),
            transforms.Normalize((0.507, 0.487, 0.441), (0.267, 0.256, 0.276)),
        ])
    else:
        tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.507, 0.487, 0.441), (0.267, 0.256, 0.276))])
    dataset = datasets.CIFAR100(root, train=train, download=False, transform=tf)
    sampler = DistributedSampler(dataset, shuffle=train)
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=8,
        pin_memory=True,
        persistent_workers=True,
        prefetch_factor=4,
    )
    return loader, sampler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/datasets/cifar100")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=256, help="per GPU")
    args = parser.parse_args()

    local_rank = setup()
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True

    train_loader, train_sampler = build_loader(args.data, args.batch_size, train=True)
    model = models.resnet18(num_classes=100).cuda(local_rank)
    model = DDP(model, device_ids=[local_rank])
    criterion = nn.CrossEntropyLoss().cuda(local_rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * dist.get_world_size(), momentum=0.9, weight_decay=5e-4)
    scaler = torch.amp.GradScaler("cuda")

    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        correct = total = 0
        for images, targets in train_loader:
            images = images.cuda(local_rank, non_blocking=True)
            targets = targets.cuda(local_rank, non_blocking=True)
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                outputs = model(images)
                loss = criterion(outputs, targets)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            correct += (outputs.argmax(1) == targets).sum().item()
            total += targets.size(0)
        stats = torch.tensor([correct, total], dtype=torch.float64).cuda(local_rank)
        dist.all_reduce(stats)
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: train accuracy {stats[0].item() / stats[1].item():.4f}")
            torch.save(model.module.state_dict(), "resnet18_cifar100.pt")

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
