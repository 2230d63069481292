"""Long-context logit scaling: logits multiplied by gamma * log(n) (critical attention scaling).

Math (Chen, Lin, Polyanskiy, Rigollet, "Critical attention scaling in long-context transformers",
arXiv 2510.05554; FACTS.md). Tokens y_1..y_n are normalised (|y_i| = 1) and the logits are
beta_n <y_i, y_j> with beta_n = gamma * log(n). In the simplex configuration (every pairwise
cosine equal to rho < 1) the weight a token puts on itself is

    A_ii = e^{beta_n} / (e^{beta_n} + (n - 1) e^{beta_n rho})
         = 1 / (1 + (n - 1) n^{-gamma (1 - rho)}),

so as n -> infinity A_ii -> 0 (every token averages all others: collapse) when
gamma < gamma_c = 1 / (1 - rho), and A_ii -> 1 (attention becomes the identity) when
gamma > gamma_c. A fixed scale (beta independent of n) always collapses at long context; the
log(n) growth with gamma near gamma_c is the critical regime.

The third seed (004 ch. 11) instead divides the logits by sqrt(d_k f(T)) with
f(T) = 1 + c loglog T or 1 + c (log T)^1.5: its multiplier DEcreases with T, which is the collapse
regime for every c, and neither formula nor its Llama-2 perplexity table is in the paper
(``longcontext.critical-scaling`` reports this as refuted).

For :class:`~transformer_math.nn.attention.MultiHeadAttention` use
``scale_fn=log_length_scale_fn(gamma)``: the logit scale becomes gamma * log(k_len) / sqrt(d_k)
(the 1/sqrt(d_k) keeps unnormalised q, k on the usual scale; pass ``divide_by_sqrt_head_dim=False``
for normalised q, k as in the paper).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

# Planted bug (transformer_math.bugs): off unless a falsifier or `tmath mutants` plants it.
LOG_OF_HEAD_DIM = declare_bug(
    "critical-scaling.log-of-wrong-length",
    "the log-length scale computes gamma log(head_dim) instead of gamma log(k_len): the factor "
    "is taken of the wrong n and no longer grows with the context", module=__name__,
    seen_in="scale_fn(head_dim, k_len) arguments swapped, or log of a fixed training length / "
    "the query length instead of the number of keys a query sees")


def _check_gamma(gamma: float) -> float:
    if isinstance(gamma, bool) or not isinstance(gamma, int | float):
        raise TypeError(f"gamma must be a real number, got {type(gamma).__name__}")
    if not (math.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma must be finite and > 0, got {gamma}")
    return float(gamma)


def _check_length(name: str, n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{name} must be an int >= 1, got {n!r}")
    return n


def critical_gamma(rho: float) -> float:
    """gamma_c = 1 / (1 - rho) for tokens with pairwise cosine rho in [-1, 1)."""
    if not (math.isfinite(rho) and -1.0 <= rho < 1.0):
        raise ValueError(f"rho must be in [-1, 1), got {rho}")
    return 1.0 / (1.0 - rho)


def simplex_self_weight(seq_len: int, gamma: float, rho: float) -> float:
    """Closed form A_ii = 1 / (1 + (n - 1) n^{-gamma (1 - rho)}) for the simplex configuration."""
    n = _check_length("seq_len", seq_len)
    critical_gamma(rho)
    g = _check_gamma(gamma)
    return 1.0 / (1.0 + (n - 1) * math.exp(-g * (1.0 - rho) * math.log(n)))


def log_length_scale_fn(
    gamma: float, *, divide_by_sqrt_head_dim: bool = True
) -> Callable[[int, int], float]:
    """A ``scale_fn(head_dim, k_len)`` for ``MultiHeadAttention``: gamma * log(k_len) [/ sqrt(d_k)].

    k_len is the number of keys a query can see (the context length n). With k_len = 1 the
    scale is 0, which is harmless: a softmax over one key is 1 whatever the logit.
    """
    g = _check_gamma(gamma)

    def scale_fn(head_dim: int, k_len: int) -> float:
        _check_length("head_dim", head_dim)
        n = _check_length("k_len", k_len)
        if planted(LOG_OF_HEAD_DIM):  # planted bug: falsifier of longcontext.critical-scaling
            n = head_dim
        beta = g * math.log(n)
        return beta / math.sqrt(head_dim) if divide_by_sqrt_head_dim else beta

    return scale_fn


def seed_polylog_scale_fn(c: float, *, power: float = 1.5) -> Callable[[int, int], float]:
    """The third seed's rule (004 ch. 11): logits / sqrt(d_k * f(T)), f(T) = 1 + c (log T)^power.

    Kept to demonstrate its behaviour (the multiplier shrinks with T); not a recommended scale.
    """
    if not (math.isfinite(c) and c >= 0):
        raise ValueError(f"c must be finite and >= 0, got {c}")

    def scale_fn(head_dim: int, k_len: int) -> float:
        _check_length("head_dim", head_dim)
        f = 1.0 + c * math.log(_check_length("k_len", k_len)) ** power
        return 1.0 / math.sqrt(head_dim * f)

    return scale_fn


def seed_loglog_scale_fn(c: float) -> Callable[[int, int], float]:
    """The third seed's first rule (004 ch. 11): logits / sqrt(d_k f(T)), f(T) = 1 + c loglog T.

    T = k_len (for T <= e the loglog is taken as 0). Kept to measure the seed's claim.
    """
    if not (math.isfinite(c) and c >= 0):
        raise ValueError(f"c must be finite and >= 0, got {c}")

    def scale_fn(head_dim: int, k_len: int) -> float:
        _check_length("head_dim", head_dim)
        log_t = math.log(_check_length("k_len", k_len))
        f = 1.0 + c * (math.log(log_t) if log_t > 1.0 else 0.0)
        return 1.0 / math.sqrt(head_dim * f)

    return scale_fn


def simplex_tokens(
    seq_len: int, rho: float, *, dtype: torch.dtype = torch.float64, rotation: Tensor | None = None
) -> Tensor:
    """n unit vectors in R^{n+1} with every pairwise cosine equal to rho (rho in [0, 1)).

    y_i = sqrt(rho) e_0 + sqrt(1 - rho) e_{i+1}; an optional orthogonal ``rotation``
    ((n+1) x (n+1)) is applied on the right (inner products are unchanged). Shape (n, n + 1).
    """
    n = _check_length("seq_len", seq_len)
    if not (math.isfinite(rho) and 0.0 <= rho < 1.0):
        raise ValueError(f"rho must be in [0, 1) for this construction, got {rho}")
    y = torch.zeros(n, n + 1, dtype=dtype)
    y[:, 0] = math.sqrt(rho)
    y[torch.arange(n), torch.arange(1, n + 1)] = math.sqrt(1.0 - rho)
    if rotation is not None:
        if tuple(rotation.shape) != (n + 1, n + 1):
            raise ValueError(
                f"rotation must have shape ({n + 1}, {n + 1}), got {tuple(rotation.shape)}"
            )
        y = y @ rotation.to(dtype)
    return y
