#!/bin/bash
#SBATCH --account=def-jsmith
#SBATCH --gres=gpu:p100l:4
#SBATCH --cpus-per-task=24
#SBATCH --mem=128000M
#SBATCH --time=0-10:00

module load python/3.10 cuda
source ~/envs/torch/bin/activate
tar xf ~/projects/def-jsmith/mnist-m.tar -C $SLURM_TMPDIR

srun python - <<'EOF'
import os
import torch
from torch import nn
from torchvision import datasets, models, transforms

data = datasets.ImageFolder(os.path.join(os.environ["SLURM_TMPDIR"], "mnist-m", "train"),
                            transform=transforms.ToTensor())
loader = torch.utils.data.DataLoader(data, batch_size=512, shuffle=True, num_workers=20)
model = nn.DataParallel(models.resnet18(num_classes=10)).cuda()  # all four GPUs
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(20):
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
torch.save(model.module.state_dict(), os.path.expanduser("~/scratch/mnistm-resnet18.pt"))
EOF
