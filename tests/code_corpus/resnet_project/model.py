"""A pre-activation-free ResNet for 64x64 inputs."""
import torch.nn as nn


def conv_bn(c_in, c_out, stride=1):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
    )


class Residual(nn.Module):
    def __init__(self, c_in, c_out, stride=1):
        super().__init__()
        self.a = conv_bn(c_in, c_out, stride)
        self.b = conv_bn(c_out, c_out)
        self.skip = nn.Identity() if stride == 1 and c_in == c_out else conv_bn(c_in, c_out, stride)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.b(self.act(self.a(x))) + self.skip(x))


class ResNet64(nn.Module):
    def __init__(self, num_classes, widths=(64, 128, 256, 512)):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], kernel_size=3, padding=1),
            nn.BatchNorm2d(widths[0]),
            nn.ReLU(inplace=True),
        )
        blocks = []
        c = widths[0]
        for i, w in enumerate(widths):
            blocks += [Residual(c, w, stride=1 if i == 0 else 2), Residual(w, w)]
            c = w
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, num_classes))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))
