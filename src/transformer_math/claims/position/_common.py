"""Shared constants and helpers of the position claims (not a claims module)."""

from __future__ import annotations

import torch
from torch import Tensor

SEED_000 = "000 §8.3.3"


def randn(g: torch.Generator, *shape: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """Standard normal draws from ``g`` (never the global RNG)."""
    return torch.randn(*shape, generator=g, dtype=dtype)
