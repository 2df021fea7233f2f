#!/usr/bin/env python3
"""Train any timm image model on an ImageFolder dataset.

    torchrun --nproc_per_node=1 timm_train.py /data/imagenet --model convnext_tiny -b 128 -j 10
"""
import argparse
import logging
import os
import time

import timm
import torch
import torch.nn as nn
from timm.data import create_transform, resolve_data_config
from timm.utils import AverageMeter, accuracy
from torchvision.datasets import ImageFolder

_logger = logging.getLogger("train")

parser = argparse.ArgumentParser(description="timm ImageFolder training")
parser.add_argument("data", metavar="DIR")
parser.add_argument("--model", default="resnet50", type=str)
parser.add_argument("--pretrained", action="store_true", default=False)
parser.add_argument("--num-classes", type=int, default=1000)
parser.add_argument("-b", "--batch-size", type=int, default=128)
parser.add_argument("-j", "--workers", type=int, default=4, help="data loading workers per GPU")
parser.add_argument("--pin-mem", action="store_true", default=False)
parser.add_argument("--epochs", type=int, default=100)
parser.add_argument("--lr", type=float, default=5e-4)
parser.add_argument("--aa", type=str, default="rand-m9-mstd0.5-inc1")
parser.add_argument("--channels-last", action="store_true", default=False)
parser.add_argument("--compile", action="store_true", default=False)
parser.add_argument("--amp-dtype", default="bfloat16", choices=["float16", "bfloat16"])


def train_one_epoch(epoch, model, loader, optimizer, loss_fn, args, scaler):
    model.train()
    losses = AverageMeter()
    amp_dtype = torch.bfloat16 if args.amp_dtype == "bfloat16" else torch.float16
    for step, (inputs, target) in enumerate(loader):
        inputs, target = inputs.cuda(non_blocking=True), target.cuda(non_blocking=True)
        if args.channels_last:
            inputs = inputs.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type="cuda", dtype=amp_dtype):
            loss = loss_fn(model(inputs), target)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.update(loss.item(), inputs.size(0))
        if step % 50 == 0:
            _logger.info(f"train {epoch} [{step}/{len(loader)}] loss {losses.avg:.4f}")


def validate(model, loader, args):
    model.eval()
    top1 = AverageMeter()
    with torch.no_grad():
        for inputs, target in loader:
            inputs, target = inputs.cuda(non_blocking=True), target.cuda(non_blocking=True)
            if args.channels_last:
                inputs = inputs.contiguous(memory_format=torch.channels_last)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                output = model(inputs)
            acc1, _ = accuracy(output, target, topk=(1, 5))
            top1.update(acc1.item(), inputs.size(0))
    return top1.avg


def main():
    logging.basicConfig(level=logging.INFO)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True

    model = timm.create_model(args.model, pretrained=args.pretrained, num_classes=args.num_classes)
    model.cuda()
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    data_config = resolve_data_config(vars(args), model=model)

    train_tf = create_transform(**data_config, is_training=True, auto_augment=args.aa)
    eval_tf = create_transform(**data_config, is_training=False)
    dataset_train = ImageFolder(os.path.join(args.data, "train"), transform=train_tf)
    dataset_eval = ImageFolder(os.path.join(args.data, "val"), transform=eval_tf)
    loader_train = torch.utils.data.DataLoader(
        dataset_train,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        pin_memory=True,
        drop_last=True,
    )
    loader_eval = torch.utils.data.DataLoader(
        dataset_eval,
        batch_size=args.batch_size * 2,
        num_workers=args.workers,
        pin_memory=args.pin_mem,
    )

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp_dtype == "float16")
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    if args.compile:
        model = torch.compile(model)

    best = 0.0
    for epoch in range(args.epochs):
        start = time.time()
        train_one_epoch(epoch, model, loader_train, optimizer, loss_fn, args, scaler)
        scheduler.step()
        top1 = validate(model, loader_eval, args)
        best = max(best, top1)
        _logger.info(f"epoch {epoch}: top1 {top1:.2f} (best {best:.2f}) in {time.time() - start:.0f}s")
        torch.save(model.state_dict(), "last.pth")


if __name__ == "__main__":
    main()
