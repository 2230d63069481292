"""ResNet-18/34 feature extractor with frozen batch norm: LeRobot ACT's image backbone.

He et al. 2016 ("Deep Residual Learning", Table 1): a 7x7/2 convolution, 3x3/2 max pooling and
four stages of BasicBlocks (two 3x3 convolutions, identity or 1x1/2 projection shortcut)
    y = ReLU(BN(conv(ReLU(BN(conv(x))))) + shortcut(x)),
widths 64, 128, 256, 512; ResNet-18 has (2, 2, 2, 2) blocks per stage, ResNet-34 (3, 4, 6, 3).
ACT (Zhao et al. 2023) and LeRobot (``lerobot/policies/act/modeling_act.py``) keep the output of
the last stage (the feature map (B, 512, H/32, W/32), no pooling, no classifier) and replace batch
norm by its frozen affine form (DETR, Carion et al. 2020):
    FrozenBN(x) = x * s + (b - mu * s),   s = w / sqrt(var + 1e-5),
with w, b, mu, var fixed buffers (never trained). (LeRobot's ``replace_final_stride_with_dilation``
cannot be used with these backbones: torchvision's BasicBlock refuses dilation > 1.)

The state-dict names are torchvision's (``conv1``, ``bn1``, ``layer{1-4}.{i}.conv1`` ...,
``downsample.0`` / ``downsample.1``; ``torchvision/models/resnet.py``), so a LeRobot checkpoint's
``model.backbone.*`` tensors load unchanged and torchvision is not needed. Weights are drawn by
:meth:`ResNetFeatures.reset_parameters` from the caller's generator (He-normal convolutions,
fan-out mode, as torchvision's ResNet does; batch norm w = 1, b = 0, mu = 0, var = 1).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

RESNET_STAGES: dict[str, tuple[int, int, int, int]] = {
    "resnet18": (2, 2, 2, 2),
    "resnet34": (3, 4, 6, 3),
}
FEATURE_CHANNELS = 512
FROZEN_BN_EPS = 1e-5


class FrozenBatchNorm2d(nn.Module):
    """Batch norm with fixed statistics and affine parameters, all buffers (module docstring)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.register_buffer("weight", torch.ones(channels))
        self.register_buffer("bias", torch.zeros(channels))
        self.register_buffer("running_mean", torch.zeros(channels))
        self.register_buffer("running_var", torch.ones(channels))

    def forward(self, x: Tensor) -> Tensor:
        scale = self.weight * (self.running_var + FROZEN_BN_EPS).rsqrt()
        shift = self.bias - self.running_mean * scale
        return x * scale.view(1, -1, 1, 1) + shift.view(1, -1, 1, 1)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with frozen batch norm and a residual shortcut."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = FrozenBatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = FrozenBatchNorm2d(cout)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                         FrozenBatchNorm2d(cout))
                           if stride != 1 or cin != cout else None)

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNetFeatures(nn.Module):
    """(B, C, H, W) -> (B, 512, H', W'), the last stage's feature map (module docstring)."""

    def __init__(self, name: str = "resnet18", in_channels: int = 3) -> None:
        super().__init__()
        if name not in RESNET_STAGES:
            raise ValueError(f"vision_backbone must be one of {sorted(RESNET_STAGES)}, "
                             f"got {name!r}")
        self.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = FrozenBatchNorm2d(64)
        cin = 64
        for i, (blocks, width) in enumerate(zip(RESNET_STAGES[name], (64, 128, 256, 512),
                                                strict=True)):
            layer = [BasicBlock(cin, width, 1 if i == 0 else 2)]
            layer += [BasicBlock(width, width, 1) for _ in range(blocks - 1)]
            self.add_module(f"layer{i + 1}", nn.Sequential(*layer))
            cin = width

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        for m in self.modules():
            if isinstance(m, nn.Conv2d):  # kaiming_normal_(mode="fan_out", relu)
                fan_out = m.out_channels * m.weight[0, 0].numel()
                nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / fan_out), generator=generator)
            elif isinstance(m, FrozenBatchNorm2d):
                m.weight.fill_(1.0)
                m.bias.zero_()
                m.running_mean.zero_()
                m.running_var.fill_(1.0)

    def forward(self, x: Tensor) -> Tensor:
        h = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, stride=2, padding=1)
        for i in range(1, 5):
            h = getattr(self, f"layer{i}")(h)
        return h
