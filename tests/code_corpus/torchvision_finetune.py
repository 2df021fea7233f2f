"""Fine-tune an ImageNet ResNet-50 on a folder of labelled images (train/ and val/)."""

import copy
import os
import sys
import time

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler
from torchvision import datasets, models, transforms

data_dir = sys.argv[1] if len(sys.argv) > 1 else "data/flowers"
device = torch.device("cuda:0")

data_transforms = {
    "train": transforms.Compose(
        [
            transforms.RandomResizedCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.ColorJitter(brightness=0.2, contrast=0.2, saturation=0.2),
            transforms.ToTensor(),
            transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ]
    ),
    "val": transforms.Compose(
        [
            transforms.Resize(256),
            transforms.CenterCrop(224),
            transforms.ToTensor(),
            transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ]
    ),
}
image_datasets = {
    split: datasets.ImageFolder(os.path.join(data_dir, split), data_transforms[split])
    for split in ["train", "val"]
}
dataloaders = {
    split: torch.utils.data.DataLoader(image_datasets[split], batch_size=64, shuffle=split == "train", num_workers=8)
    for split in ["train", "val"]
}
class_names = image_datasets["train"].classes


def train_one_epoch(model, criterion, optimizer):
    model.train()
    running_loss, running_correct = 0.0, 0
    for inputs, labels in dataloaders["train"]:
        inputs = inputs.to(device)
        labels = labels.to(device)
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item() * inputs.size(0)
        running_correct += (outputs.argmax(1) == labels).sum().item()
    n = len(image_datasets["train"])
    return running_loss / n, running_correct / n


def validate(model, criterion):
    model.eval()
    running_loss, running_correct = 0.0, 0
    with torch.no_grad():
        for inputs, labels in dataloaders["val"]:
            inputs = inputs.to(device)
            labels = labels.to(device)
            outputs = model(inputs)
            running_loss += criterion(outputs, labels).item() * inputs.size(0)
            running_correct += (outputs.argmax(1) == labels).sum().item()
    n = len(image_datasets["val"])
    return running_loss / n, running_correct / n


def fit(model, criterion, optimizer, scheduler, num_epochs=25):
    since = time.time()
    best_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0
    for epoch in range(num_epochs):
        train_loss, train_acc = train_one_epoch(model, criterion, optimizer)
        scheduler.step()
        val_loss, val_acc = validate(model, criterion)
        print(f"{epoch}/{num_epochs - 1} train {train_loss:.4f}/{train_acc:.4f} val {val_loss:.4f}/{val_acc:.4f}")
        if val_acc > best_acc:
            best_acc = val_acc
            best_wts = copy.deepcopy(model.state_dict())
    print(f"done in {time.time() - since:.0f}s, best val acc {best_acc:.4f}")
    model.load_state_dict(best_wts)
    return model


model_ft = models.resnet50(weights=models.ResNet50_Weights.IMAGENET1K_V2)
model_ft.fc = nn.Linear(model_ft.fc.in_features, len(class_names))
model_ft = model_ft.to(device)

criterion = nn.CrossEntropyLoss()
optimizer_ft = optim.SGD(model_ft.parameters(), lr=0.001, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=7, gamma=0.1)

model_ft = fit(model_ft, criterion, optimizer_ft, exp_lr_scheduler, num_epochs=25)
torch.save(model_ft.state_dict(), "resnet50_finetuned.pt")
