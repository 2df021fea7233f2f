import argparse
import os

import torch
import torchvision
from torchvision import transforms

parser = argparse.ArgumentParser(description="Fine-tune a ResNet-50 on CUB-200")
parser.add_argument("--root", type=str, required=True)
parser.add_argument("--epochs", type=int, default=30)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("-j", "--workers", type=int, default=8, help="data loading workers")
args = parser.parse_args()

augment = transforms.Compose([
    transforms.RandomResizedCrop(224),
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
])
train_set = torchvision.datasets.ImageFolder(os.path.join(args.root, "images"), augment)
train_loader = torch.utils.data.DataLoader(
    train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, pin_memory=True
)

model = torchvision.models.resnet50(weights="IMAGENET1K_V2")
model.fc = torch.nn.Linear(model.fc.in_features, 200)
model = model.cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
criterion = torch.nn.CrossEntropyLoss()

for epoch in range(args.epochs):
    model.train()
    for images, labels in train_loader:
        images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
        loss = criterion(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save(model.state_dict(), f"cub-epoch{epoch}.pt")
