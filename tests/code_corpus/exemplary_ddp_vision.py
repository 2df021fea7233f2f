"""ImageNet ResNet-50 with DDP under torchrun, written to the cluster's checklist.

torchrun --nproc_per_node=8 exemplary_ddp_vision.py --data /datasets/imagenet
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from torchvision.transforms import v2

CPUS_PER_GPU = 16
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def gpu_augment(images, generator=None):
    """Random flip and brightness jitter on the GPU, per sample."""
    n = images.shape[0]
    flip = torch.rand(n, 1, 1, 1, device=images.device, generator=generator) < 0.5
    images = torch.where(flip, images.flip(-1), images)
    scale = torch.empty(n, 1, 1, 1, device=images.device).uniform_(0.8, 1.2)
    return (images * scale).clamp_(0, 1)


@torch.no_grad()
def evaluate(model, loader, device, mean, std):
    model.eval()
    hits = torch.zeros(2, device=device)
    for images, labels in loader:
        images = images.to(device, non_blocking=True, memory_format=torch.channels_last)
        labels = labels.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model((images - mean) / std)
        hits[0] += (logits.argmax(1) == labels).sum()
        hits[1] += labels.numel()
    dist.all_reduce(hits)
    return (hits[0] / hits[1]).item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--epochs", type=int, default=90)
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()

    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)

    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

    # Only decoding and resizing on the CPU workers; the random augmentation runs on the GPU.
    train_tf = v2.Compose([v2.Resize(256), v2.CenterCrop(224), v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
    train_set = torchvision.datasets.ImageFolder(os.path.join(args.data, "train"), train_tf)
    val_set = torchvision.datasets.ImageFolder(os.path.join(args.data, "val"), train_tf)
    train_sampler = DistributedSampler(train_set)
    loader_args = dict(num_workers=CPUS_PER_GPU, pin_memory=True, persistent_workers=True, prefetch_factor=4)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler, drop_last=True, **loader_args)
    val_loader = DataLoader(val_set, batch_size=args.batch_size, sampler=DistributedSampler(val_set, shuffle=False), **loader_args)

    model = torchvision.models.resnet50().to(device, memory_format=torch.channels_last)
    model = DDP(model, device_ids=[local_rank])
    try:
        model = torch.compile(model)
    except Exception as err:
        print("compile failed, continuing without it:", err)

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * dist.get_world_size(), momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)

    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        start = time.time()
        for images, labels in train_loader:
            images = images.to(device, non_blocking=True, memory_format=torch.channels_last)
            labels = labels.to(device, non_blocking=True)
            images = gpu_augment(images)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model((images - mean) / std), labels, label_smoothing=0.1)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        scheduler.step()
        acc = evaluate(model, val_loader, device, mean, std)
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: top-1 {acc:.4f} in {time.time() - start:.0f}s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
