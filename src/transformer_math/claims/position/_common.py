"""Shared constants and helpers of the position claims (not a claims module)."""

from __future__ import annotations

import torch
from torch import Tensor

SEED_000 = "000 §8.3.3"


def randn(g: torch.Generator, *shape: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """Standard normal draws from ``g`` (never the global RNG)."""
    return torch.randn(*shape, generator=g, dtype=dtype)


def library_rotation(position: int, inv_freq: Tensor, layout: str = "interleaved") -> Tensor:
    """The library's R_m as a float64 (d, d) matrix: ``apply_rotary`` with the float32 tables of
    ``rope_cos_sin`` at ``position`` applied to the identity basis (column j = R_m e_j)."""
    from transformer_math.functional.rope import apply_rotary, rope_cos_sin

    d = 2 * inv_freq.numel()
    eye = torch.eye(d, dtype=torch.float64).unsqueeze(1)  # (d, 1, d): rows e_j at one position
    cos, sin = rope_cos_sin(torch.tensor([position]), inv_freq, layout=layout)
    return apply_rotary(eye, cos, sin, layout=layout).squeeze(1).T


def library_rotations(positions: Tensor, inv_freq: Tensor, layout: str = "interleaved"
                      ) -> Tensor:
    """:func:`library_rotation` for many positions at once: (N,) -> (N, d, d) float64."""
    from transformer_math.functional.rope import apply_rotary, rope_cos_sin

    d = 2 * inv_freq.numel()
    n = positions.numel()
    eye = torch.eye(d, dtype=torch.float64).unsqueeze(1).expand(d, n, d)  # e_j at every m
    cos, sin = rope_cos_sin(positions, inv_freq, layout=layout)
    return apply_rotary(eye, cos, sin, layout=layout).permute(1, 2, 0)  # [m, :, j] = R_m e_j
