"""Additive sinusoidal position codes and ALiBi biases (pure functions, no state).

Sinusoidal code (000 §8.3.3 理论 A; Vaswani et al. 2017, §3.5):
    PE[pos, 2i] = sin(pos theta_i),  PE[pos, 2i+1] = cos(pos theta_i),  theta_i = b^(-2i/d),
bounded in [-1, 1], defined for every position. Per pair, a shift by D is a rotation that does
not depend on pos:  (sin, cos)(pos + D) = M(D) (sin, cos)(pos),
M(D) = [[cos D theta_i, sin D theta_i], [-sin D theta_i, cos D theta_i]].

ALiBi (Press et al. 2022; 000 §8.3.3 "ALiBi"): no code on the vectors; the logit of query i and key
j receives the bias -m_h |i - j|. Slopes: for H a power of two m_h = 2^(-8h/H), h = 1..H;
otherwise with n = 2^floor(log2 H): slopes(n) followed by every other slope of slopes(2n), the
first H - n of them.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

# Planted bugs (issue 14; off unless a caller plants them, see transformer_math/bugs.py).
SINUSOID_FREQUENCY = declare_bug(
    "sinusoid.frequency-exponent",
    "sinusoidal code with theta_i = 10000^(-i/d) instead of 10000^(-2i/d) (pair index where "
    "the channel index belongs)",
    module=__name__, seen_in="re-implementations of Vaswani et al. eq. (3.5) that use i for 2i")
ALIBI_ODD_HEADS = declare_bug(
    "alibi.odd-head-slopes",
    "for a head count H that is not a power of two take the first H slopes of the next power "
    "of two instead of Press et al.'s interleaving rule",
    module=__name__,
    seen_in="ALiBi ports that only handle powers of two (Press et al.'s reference code has a "
            "separate branch for other H)")


def sinusoidal_encoding(positions: Tensor, dim: int, base: float = 10000.0) -> Tensor:
    """PE at arbitrary (integer or real) ``positions`` (...,) -> (..., dim), float32.

    Angles are formed in float32 (float64 when ``positions`` is float64).
    """
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2 or dim % 2 != 0:
        raise ValueError(f"dim must be a positive even integer, got {dim!r}")
    if not (math.isfinite(base) and base > 1.0):
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    real = torch.float64 if positions.dtype == torch.float64 else torch.float32
    theta = sinusoid_frequencies(dim, base)
    angles = positions.to(real).unsqueeze(-1) * theta.to(device=positions.device, dtype=real)
    pe = torch.stack([angles.sin(), angles.cos()], dim=-1)  # (..., d/2, 2): (sin, cos) per pair
    return pe.flatten(-2)


def sinusoid_frequencies(dim: int, base: float = 10000.0) -> Tensor:
    """theta_i = base^(-2i/dim), i = 0 .. dim/2 - 1, float64 (Vaswani et al. 2017 §3.5)."""
    exponents = torch.arange(0, dim, 2, dtype=torch.float64) / dim
    if planted(SINUSOID_FREQUENCY):  # planted bug: falsifier of position.sinusoidal-shift
        exponents = torch.arange(dim // 2, dtype=torch.float64) / dim
    return 1.0 / (base ** exponents)


def sinusoidal_table(num_positions: int, dim: int, base: float = 10000.0) -> Tensor:
    """The (num_positions, dim) table PE[pos] for pos = 0 .. num_positions - 1."""
    if num_positions < 0:
        raise ValueError(f"num_positions must be >= 0, got {num_positions}")
    return sinusoidal_encoding(torch.arange(num_positions), dim, base)


def sinusoidal_shift_matrix(shift: float, dim: int, base: float = 10000.0) -> Tensor:
    """Block-diagonal (dim, dim) M(D) with PE(pos + D) = M(D) PE(pos), float64."""
    theta = sinusoid_frequencies(dim, base)
    c, s = (shift * theta).cos(), (shift * theta).sin()
    M = torch.zeros(dim, dim, dtype=torch.float64)
    idx = torch.arange(dim // 2)
    M[2 * idx, 2 * idx], M[2 * idx, 2 * idx + 1] = c, s
    M[2 * idx + 1, 2 * idx], M[2 * idx + 1, 2 * idx + 1] = -s, c
    return M


def _power_of_two_slopes(n: int) -> list[float]:
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_slopes(num_heads: int) -> Tensor:
    """Per-head ALiBi slopes m_h (Press et al. 2022, §3 and their reference code), float32."""
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
        raise ValueError(f"num_heads must be a positive int, got {num_heads!r}")
    n = 2 ** math.floor(math.log2(num_heads))
    if planted(ALIBI_ODD_HEADS) and n < num_heads:  # planted bug: falsifier of position.alibi
        return torch.tensor(_power_of_two_slopes(2 * n)[:num_heads], dtype=torch.float32)
    slopes = _power_of_two_slopes(n)
    if n < num_heads:
        slopes += _power_of_two_slopes(2 * n)[0::2][: num_heads - n]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(slopes: Tensor, query_positions: Tensor, key_positions: Tensor) -> Tensor:
    """Additive bias (H, T, S): -m_h |q_t - k_s| for 1-D position tensors (T,) and (S,)."""
    if slopes.dim() != 1:
        raise ValueError(f"slopes must be 1-D (num_heads,), got {tuple(slopes.shape)}")
    if query_positions.dim() != 1 or key_positions.dim() != 1:
        raise ValueError(
            f"query_positions and key_positions must be 1-D, got {tuple(query_positions.shape)}"
            f" and {tuple(key_positions.shape)}"
        )
    distance = (query_positions.to(torch.float32).unsqueeze(1)
                - key_positions.to(torch.float32).unsqueeze(0)).abs()  # (T, S)
    return -slopes.to(torch.float32).view(-1, 1, 1) * distance  # (H, T, S)
