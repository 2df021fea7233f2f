# Quick CIFAR-10 baseline: everything at module level, as in a notebook turned into a script.
import torch
import torchvision
import torchvision.transforms as T
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

dev = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
print("running on", dev)

norm = T.Compose([T.ToTensor(),
                  T.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))])

BATCH = 32
train_ds = torchvision.datasets.CIFAR10(root='./cifar', train=True, download=True, transform=norm)
train_dl = torch.utils.data.DataLoader(train_ds, batch_size=BATCH, shuffle=True, num_workers=2)
val_ds = torchvision.datasets.CIFAR10(root='./cifar', train=False, download=True, transform=norm)
val_dl = torch.utils.data.DataLoader(val_ds, batch_size=BATCH, shuffle=False, num_workers=2)


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_a = nn.Conv2d(3, 16, 3, padding=1)
        self.conv_b = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(32 * 8 * 8, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv_a(x)))
        x = self.pool(F.relu(self.conv_b(x)))
        x = x.view(x.size(0), -1)
        return self.fc2(F.relu(self.fc1(x)))


net = TinyCNN()
net.to(dev)
loss_fn = nn.CrossEntropyLoss()
opt = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

for epoch in range(5):
    total = 0.0
    for i, (x, y) in enumerate(train_dl):
        x, y = x.to(dev), y.to(dev)
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        total += loss.item()
        if i % 500 == 499:
            print(f'epoch {epoch + 1} step {i + 1}: loss {total / 500:.3f}')
            total = 0.0

torch.save(net.state_dict(), 'tiny_cnn.pth')

right = seen = 0
with torch.no_grad():
    for x, y in val_dl:
        x, y = x.to(dev), y.to(dev)
        pred = net(x).argmax(1)
        seen += y.size(0)
        right += (pred == y).sum().item()
print(f'val accuracy: {100 * right / seen:.1f} %')
