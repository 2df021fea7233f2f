"""Tabular regression MLP trained on all GPUs of a node, one process each (mp.spawn)."""
import argparse
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class MLP(nn.Module):
    def __init__(self, n_in, hidden=1024, depth=4):
        super().__init__()
        layers = []
        for i in range(depth):
            layers += [nn.Linear(n_in if i == 0 else hidden, hidden), nn.LayerNorm(hidden), nn.SiLU()]
        layers.append(nn.Linear(hidden, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x).squeeze(-1)


def load_arrays(path):
    arrays = np.load(path)
    x = torch.from_numpy(arrays["x"]).float()
    y = torch.from_numpy(arrays["y"]).float()
    return TensorDataset(x, y)


def worker(rank, world_size, args):
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)
    torch.set_float32_matmul_precision("highest")

    train_set = load_arrays(args.train)
    val_set = load_arrays(args.val)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=DistributedSampler(train_set), num_workers=args.workers, pin_memory=True, persistent_workers=False)
    val_loader = DataLoader(val_set, batch_size=4096, sampler=DistributedSampler(val_set, shuffle=False), num_workers=4, pin_memory=True, persistent_workers=True, prefetch_factor=8)

    model = MLP(train_set.tensors[0].shape[1]).to(rank)
    model = DistributedDataParallel(model, device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()

    for epoch in range(args.epochs):
        train_loader.sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            x, y = x.to(rank, non_blocking=True), y.to(rank, non_blocking=True)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()

        model.eval()
        total = torch.zeros(2, device=rank)
        with torch.no_grad():
            for x, y in val_loader:
                x, y = x.to(rank), y.to(rank)
                total[0] += loss_fn(model(x), y) * len(y)
                total[1] += len(y)
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: val mse {(total[0] / total[1]).item():.5f}")

    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", required=True)
    parser.add_argument("--val", required=True)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    world_size = torch.cuda.device_count()
    mp.spawn(worker, args=(world_size, args), nprocs=world_size, join=True)
