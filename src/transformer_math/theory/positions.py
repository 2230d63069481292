"""Closed forms about position encodings that the position claims compare against.

Nothing here trains or builds a model: each function is a formula (or the re-expression of a
seed's code, to measure what it computes) evaluated on tensors.

- :func:`roformer_relative_bound`: RoFormer's long-term-decay bound (Su et al. 2021 §3.4.3).
- :func:`aliased_fraction`: how often far RoPE distances alias onto trained ones on chosen pairs.
- :func:`alibi_closed_form_slopes`: ALiBi's slopes for any head count (Press et al. 2022 §3).
- :func:`reflection_family`: a norm-preserving family that is NOT a rotation group.
- :func:`seed_ndim_rope_tables`: what the third seed's NDimensionalRoPE builds (004 ch. 9).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from transformer_math.functional.rope import rope_angles

TWO_PI = 2 * math.pi


def roformer_relative_bound(inv_freq: Tensor, distances: Tensor) -> Tensor:
    """RoFormer §3.4.3: (1/(d/2)) sum_j |S_j|, S_j = sum_{k<j} e^{i s θ_k}, j = 1..d/2.

    With h_i = q_[2i:2i+2] k_[2i:2i+2]^* (complex), Abel summation gives
    |sum_i h_i e^{i s θ_i}| <= max_i |h_{i+1} - h_i| sum_j |S_j|; this returns the relative part
    (d/2 times smaller), float64, one value per distance s.
    """
    phases = distances.double().unsqueeze(-1) * inv_freq.double()  # (S, d/2)
    partial = torch.polar(torch.ones_like(phases), phases).cumsum(-1)  # S_1 .. S_{d/2}
    return partial.abs().mean(-1)


def aliased_fraction(inv_freq: Tensor, pairs: Tensor, train_len: int, test_len: int,
                     tolerance: float, step: int = 1) -> float:
    """Fraction of far distances s in [train_len, test_len) (every ``step``-th) whose phases
    s θ_i on ``pairs`` all lie within ``tolerance`` (mod 2π) of the phases of some trained
    distance s' in [1, train_len): false near matches, if attention read only those pairs."""
    far = torch.arange(train_len, test_len, step)
    near = torch.arange(1, train_len)
    pf = rope_angles(far, inv_freq[pairs]).double()
    pn = rope_angles(near, inv_freq[pairs]).double()
    diff = (pf.unsqueeze(1) - pn.unsqueeze(0) + math.pi).remainder(TWO_PI) - math.pi
    close = diff.abs().amax(-1) <= tolerance  # (far, near)
    return float(close.any(-1).double().mean())


def alibi_closed_form_slopes(num_heads: int) -> list[float]:
    """Press et al. 2022 §3 and reference code: with n = 2^floor(log2 H), m_k = 2^(-8k/n) for
    k = 1..n, then (H not a power of two) 2^(-4(2j-1)/n) for j = 1..H-n (the odd-indexed slopes
    of 2n heads)."""
    if num_heads < 1:
        raise ValueError(f"num_heads must be >= 1, got {num_heads}")
    n = 1
    while 2 * n <= num_heads:
        n *= 2
    return [2.0 ** (-8.0 * k / n) for k in range(1, n + 1)] + [
        2.0 ** (-4.0 * (2 * j - 1) / n) for j in range(1, num_heads - n + 1)]


def reflection_family(position: int, inv_freq: Tensor) -> Tensor:
    """f(m) = block-diagonal reflections across the lines at angle m θ_i / 2, float64 (d, d).

    Orthogonal like RoPE's R(m θ), but f(m)^T f(n) is the rotation R((n - m) θ) rather than
    f(n - m): the group property f(m)^T f(n) = f(n - m) (000 §8.3.3 练习 8.3.3-1) fails.
    """
    blocks = []
    for theta in inv_freq.double().tolist():
        c, s = math.cos(position * theta), math.sin(position * theta)
        blocks.append(torch.tensor([[c, s], [s, -c]], dtype=torch.float64))
    return torch.block_diag(*blocks)


def seed_ndim_rope_tables(head_dim: int, n_dims: int, max_pos: int, base: float = 10000.0
                          ) -> tuple[int, tuple[int, ...]]:
    """The third seed's NDimensionalRoPE construction (004 ch. 9, '实践代码'), re-expressed to
    measure it: per axis it takes ``arange(0, pairs_per_dim, 2) / pairs_per_dim`` exponents
    (pairs_per_dim = head_dim / (2 n_dims)) and builds its cache from a 1-D position vector.
    Returns (number of frequencies built, shape of its cos cache)."""
    pairs_per_dim = head_dim // (2 * n_dims)
    per_axis = torch.arange(0, pairs_per_dim, 2).float() / pairs_per_dim
    inv = torch.cat([1.0 / base ** per_axis for _ in range(n_dims)])
    freqs = torch.einsum("p,f->pf", torch.arange(max_pos).float(), inv)  # what 'd,p->dp' can do
    emb = torch.cat([freqs, freqs], dim=-1)
    return inv.numel(), tuple(emb.cos().unsqueeze(0).unsqueeze(0).shape)
