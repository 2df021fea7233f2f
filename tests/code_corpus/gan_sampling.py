"""Sampling helpers for a trained DCGAN generator (imported by the notebook that draws the
figures): latent batches, walks between two latents, labels for a class-conditional grid."""
import torch
import torchvision.utils as vutils


def latent_batch(n, nz=100):
    return torch.randn(n, nz, 1, 1).cuda()


def latent_walk(z0, z1, steps=8):
    alphas = torch.linspace(0, 1, steps).cuda().view(-1, 1, 1, 1)
    return z0 * (1 - alphas) + z1 * alphas


def grid_labels(classes, per_class):
    return torch.arange(classes).repeat_interleave(per_class).cuda()


def save_grid(images, path, nrow=8):
    vutils.save_image(images, path, nrow=nrow, normalize=True, value_range=(-1, 1))
