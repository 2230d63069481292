"""Attention statistics: row entropy, normalised entropy and the effective rank of a matrix.

Math.
- Entropy of an attention row a_i (a probability vector over the keys):
  H(a_i) = -sum_j a_ij log a_ij
  (natural log, 0 log 0 = 0), between 0 (one-hot: hard selection) and log n (uniform: averaging).
  In the kernel view (000 §8.3.2, corollary 2) the inverse temperature beta is an inverse
  bandwidth and dH/dbeta = -beta Var_a(s) <= 0 for logits beta * s: entropy falls as beta grows.
  ``attention_entropy`` is the project's single implementation (``diagnostics.jacobian``); it is
  re-exported here so that attention statistics live together.
- Effective rank (Roy & Vetterli 2007): with singular values sigma_k and p_k = sigma_k / sum sigma,
  erank(M) = exp(-sum_k p_k log p_k), between 1 (rank one) and min(m, n) (flat spectrum). Rank
  collapse of attention (all rows alike) shows as erank -> 1; attention -> identity as erank -> n.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from transformer_math.diagnostics.jacobian import attention_entropy

__all__ = ["attention_entropy", "effective_rank", "mean_attention_entropy", "normalized_entropy"]


def normalized_entropy(weights: Tensor, dim: int = -1) -> Tensor:
    """H(a_i) / log(n) in [0, 1], n the number of keys along ``dim`` (n = 1 gives 0)."""
    n = weights.shape[dim]
    h = attention_entropy(weights, dim=dim)
    return h / math.log(n) if n > 1 else torch.zeros_like(h)


def mean_attention_entropy(weights: Tensor) -> float:
    """Mean row entropy (nats) over every row of a (..., T, S) weight tensor."""
    if weights.dim() < 2:
        raise ValueError(f"weights must have shape (..., T, S), got {tuple(weights.shape)}")
    return float(attention_entropy(weights, dim=-1).mean())


def effective_rank(matrix: Tensor) -> Tensor:
    """exp(entropy of the normalised singular values) of each (m, n) matrix in (..., m, n).

    A zero matrix has effective rank 0 by convention.
    """
    if not isinstance(matrix, Tensor) or not matrix.is_floating_point():
        raise TypeError(f"matrix must be a floating torch.Tensor, got {type(matrix).__name__}")
    if matrix.dim() < 2:
        raise ValueError(f"matrix must have shape (..., m, n), got {tuple(matrix.shape)}")
    s = torch.linalg.svdvals(matrix)
    total = s.sum(dim=-1, keepdim=True)
    p = s / torch.where(total == 0, torch.ones_like(total), total)
    logs = torch.where(p > 0, torch.log(p), torch.zeros_like(p))
    erank = torch.exp(-(p * logs).sum(dim=-1))
    return torch.where(total.squeeze(-1) == 0, torch.zeros_like(erank), erank)
