# Older-style multi-GPU training on one machine: wrap the model in DataParallel and go.
import time

import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms
from torch.utils.data import DataLoader

EPOCHS = 90
BATCH_SIZE = 512
WORKERS = 16

torch.backends.cudnn.benchmark = True
device = torch.device("cuda")

normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
train_dataset = torchvision.datasets.ImageFolder(
    "/datasets/imagenet/train",
    transforms.Compose([transforms.Resize(146), transforms.CenterCrop(128), transforms.ToTensor(), normalize]),
)
val_dataset = torchvision.datasets.ImageFolder(
    "/datasets/imagenet/val",
    transforms.Compose([transforms.Resize(146), transforms.CenterCrop(128), transforms.ToTensor(), normalize]),
)
train_loader = DataLoader(train_dataset, batch_size=BATCH_SIZE, shuffle=True, num_workers=WORKERS, pin_memory=True)
val_loader = DataLoader(val_dataset, batch_size=BATCH_SIZE, num_workers=WORKERS, pin_memory=True, persistent_workers=True, prefetch_factor=4)

model = torchvision.models.resnet18(num_classes=1000)
if torch.cuda.device_count() > 1:
    print("Using", torch.cuda.device_count(), "GPUs")
    model = nn.DataParallel(model)
model = model.to(device)

criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
scaler = torch.cuda.amp.GradScaler()


def validate():
    model.eval()
    correct = 0
    with torch.inference_mode():
        for images, target in val_loader:
            images, target = images.to(device), target.to(device)
            with torch.cuda.amp.autocast():
                correct += (model(images).argmax(1) == target).sum().item()
    return correct / len(val_dataset)


for epoch in range(EPOCHS):
    model.train()
    tic = time.time()
    for images, target in train_loader:
        images, target = images.to(device), target.to(device)
        with torch.cuda.amp.autocast():
            loss = criterion(model(images), target)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print(f"epoch {epoch} took {time.time() - tic:.0f}s, val acc {validate():.3f}")
