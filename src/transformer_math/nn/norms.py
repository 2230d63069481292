"""Normalisation modules (LayerNorm, RMSNorm) and a registry to choose one by name.

Math: see ``functional.norms`` (000 §8.3.7 "理论 B"; Ba et al. 2016; Zhang & Sennrich 2019).
LayerNorm has d scale (gamma) and d shift (beta) parameters; RMSNorm only d scales.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from transformer_math.functional.norms import layer_norm, rms_norm


class LayerNorm(nn.Module):
    """gamma * (x - mean) / sqrt(var + eps) + beta over the last dimension (width ``dim``)."""

    def __init__(self, dim: int, *, eps: float = 1e-5, affine: bool = True) -> None:
        super().__init__()
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim)) if affine else None
        self.bias = nn.Parameter(torch.zeros(dim)) if affine else None

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """gamma = 1, beta = 0 (deterministic; ``generator`` is accepted for the convention)."""
        if self.weight is not None and self.bias is not None:
            self.weight.fill_(1.0)
            self.bias.zero_()

    def forward(self, x: Tensor) -> Tensor:
        return layer_norm(x, self.weight, self.bias, self.eps)


class RMSNorm(nn.Module):
    """gamma * x / sqrt(mean(x^2) + eps) over the last dimension (no centring, no shift)."""

    def __init__(self, dim: int, *, eps: float = 1e-6, affine: bool = True) -> None:
        super().__init__()
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim)) if affine else None

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """gamma = 1 (deterministic; ``generator`` is accepted for the convention)."""
        if self.weight is not None:
            self.weight.fill_(1.0)

    def forward(self, x: Tensor) -> Tensor:
        return rms_norm(x, self.weight, self.eps)


NORMS: dict[str, Callable[[int], nn.Module]] = {
    "layernorm": LayerNorm,
    "rmsnorm": RMSNorm,
}


def build_norm(name: str, dim: int) -> nn.Module:
    """A normalisation module by registry name (``layernorm`` | ``rmsnorm``)."""
    if name not in NORMS:
        raise ValueError(f"norm_type must be one of {sorted(NORMS)}, got {name!r}")
    return NORMS[name](dim)
