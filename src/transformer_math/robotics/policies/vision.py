"""A small convolutional camera encoder for ACT (no pretrained weights).

ACT (Zhao et al. 2023) feeds each camera through a ResNet-18 backbone and gives the decoder's
memory its feature map. Here each camera image (B, C, H, W), values in [0, 1], goes through
    Conv(C -> w, 5x5, stride 2) - GELU - Conv(w -> w, 3x3, stride 2) - GELU - global average pool
    - Linear(w -> dim),
one memory token per camera (the encoder's weights are shared by all cameras; the memory's
learned position table tells them apart). Inputs are mapped to [-1, 1] first (x * 2 - 1).
Weights are drawn by :meth:`ImageEncoder.reset_parameters` from the caller's generator (PyTorch's
default Conv2d / Linear scheme: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

ENCODER_WIDTH = 32


class ImageEncoder(nn.Module):
    """(B, C, H, W) images in [0, 1] -> (B, dim) tokens (module docstring)."""

    def __init__(self, channels: int, dim: int, width: int = ENCODER_WIDTH) -> None:
        super().__init__()
        self.channels = channels
        self.conv1 = nn.Conv2d(channels, width, 5, stride=2, padding=2)
        self.conv2 = nn.Conv2d(width, width, 3, stride=2, padding=1)
        self.proj = nn.Linear(width, dim)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        for layer in (self.conv1, self.conv2, self.proj):
            fan_in = layer.weight[0].numel()
            bound = 1.0 / math.sqrt(fan_in)
            nn.init.uniform_(layer.weight, -bound, bound, generator=generator)
            nn.init.uniform_(layer.bias, -bound, bound, generator=generator)

    def forward(self, images: Tensor) -> Tensor:
        h = F.gelu(self.conv1(images * 2.0 - 1.0))
        h = F.gelu(self.conv2(h))
        return self.proj(h.mean(dim=(-2, -1)))
