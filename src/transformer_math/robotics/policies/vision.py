"""Small convolutional image encoders (no pretrained weights): ACT's camera encoder and the VLA's
conv patch stem (:class:`ConvPatchEmbed`).

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
from collections.abc import Iterable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

ENCODER_WIDTH = 32


@torch.no_grad()
def torch_default_init(layers: Iterable[nn.Module], generator: torch.Generator | None) -> None:
    """PyTorch's default Conv2d / Linear scheme from ``generator``: weight and bias each
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = the weight's elements per output unit."""
    for layer in layers:
        bound = 1.0 / math.sqrt(layer.weight[0].numel())
        nn.init.uniform_(layer.weight, -bound, bound, generator=generator)
        nn.init.uniform_(layer.bias, -bound, bound, generator=generator)


class ImageEncoder(nn.Module):
    """(B, C, H, W) images in [0, 1] -> (B, dim) tokens (module docstring)."""

    def __init__(self, channels: int, dim: int, width: int = ENCODER_WIDTH) -> None:
        super().__init__()
        self.channels = channels
        self.conv1 = nn.Conv2d(channels, width, 5, stride=2, padding=2)
        self.conv2 = nn.Conv2d(width, width, 3, stride=2, padding=1)
        self.proj = nn.Linear(width, dim)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        torch_default_init((self.conv1, self.conv2, self.proj), generator)

    def forward(self, images: Tensor) -> Tensor:
        h = F.gelu(self.conv1(images * 2.0 - 1.0))
        h = F.gelu(self.conv2(h))
        return self.proj(h.mean(dim=(-2, -1)))


STEM_WIDTH = 32


class ConvPatchEmbed(nn.Module):
    """(B, C, S, S) images in [0, 1] -> (B, (S / p)^2, dim) patch tokens through a conv stem.

    After the "early convolutions" of Xiao et al. 2021 (Early Convolutions Help Transformers
    See Better, NeurIPS; theirs: stride-2 3 x 3 convolutions with BatchNorm and ReLU, then a
    1 x 1): the ViT's one p x p linear patch projection is replaced by 3 x 3 convolutions, one
    at stride 1 then log2(p) at stride 2, GELU between them, ending in ``dim`` channels on the
    (S / p) x (S / p) grid. Token r * (S / p) + c belongs to grid cell (r, c), the order of the
    linear path; a stride-2 3 x 3 convolution with padding 1 centres output i on input 2i, so
    the token is centred on the cell's top-left pixel (p r, p c), half a cell from the cell's
    centre, the same offset for every token (its RoPE position is consistent across images).
    Widths: ``width``, then 2 ``width`` up to the last layer.
    ``p`` must be a power of two >= 2. Inputs are mapped to [-1, 1] first (x * 2 - 1).

    Why here: on VLAPush (objects ~4 px wide on a 32-px image, 8-px patches), the linear patch
    embedding trained from scratch left the image unused: with the images of a batch shuffled,
    the flow loss moved by 1e-4 (0.9448 -> 0.9448, 2000 steps; and 1.1159 -> 1.1161 at 4 layers
    and 6000 steps), against 0.945 -> 1.351 with this stem (session 51, docs/vla.md).
    Weights: PyTorch's default Conv2d scheme, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), from the
    caller's generator.
    """

    def __init__(self, channels: int, dim: int, patch_size: int, width: int = STEM_WIDTH) -> None:
        super().__init__()
        if patch_size < 2 or patch_size & (patch_size - 1):
            raise ValueError(f"patch_size must be a power of two >= 2 for the conv stem, got "
                             f"{patch_size}")
        downs = patch_size.bit_length() - 1
        widths = [channels, width] + [2 * width] * (downs - 1) + [dim]
        layers = [nn.Conv2d(widths[0], widths[1], 3, padding=1)]
        for i in range(1, downs + 1):
            layers.append(nn.Conv2d(widths[i], widths[i + 1], 3, stride=2, padding=1))
        self.convs = nn.ModuleList(layers)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        torch_default_init(self.convs, generator)

    def forward(self, images: Tensor) -> Tensor:
        h = images * 2.0 - 1.0
        for i, layer in enumerate(self.convs):
            h = layer(h) if i == len(self.convs) - 1 else F.gelu(layer(h))
        return h.flatten(2).transpose(1, 2)
