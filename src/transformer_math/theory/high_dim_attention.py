"""Single-head attention on high-dimensional random tokens (004 ch. 13 setting).

Tokens x_1..x_n are i.i.d. N(0, I_d), stacked as X (n x d); one head with query-key matrix
W_QK = W_Q W_K^T (d x d) attends with

    A = softmax(X W_QK X^T / sqrt(d))      (rows: queries, columns: keys; 004:902)

computed here by the project's attention (``functional.attention.scaled_dot_product_attention``,
reference backend, q = X W_QK, k = v = X, the library's default scale 1/sqrt(d_k) with d_k = d,
so a planted bug in that default reaches this computation). Facts the checks use:

- A is n x n, so rank(A) <= n and its effective rank (exp of the entropy of its normalised
  singular values) is <= n whatever W_QK and the input covariance are.
- Every row is a probability vector over n keys, so its entropy is <= log n.
- x_i^T x_j / d for i != j has mean 0 and standard deviation 1/sqrt(d) (E|x_i^T x_j| / d =
  sqrt(2 / (pi d))): tokens become orthogonal as d grows (004:936, correct).
- The logits are x_i^T W_QK x_j / sqrt(d): the diagonal has mean tr(W_QK)/sqrt(d) and the
  off-diagonal entries standard deviation ||W_QK||_F / sqrt(d). Attention concentrates on the
  token itself only when tr(W_QK)/sqrt(d) grows (W_QK = I: sqrt(d)); for random factors with
  N(0, 1/d) entries tr(W_QK) = O(1) and it does not, orthogonality notwithstanding.
"""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_math.functional.attention import scaled_dot_product_attention


def gaussian_tokens(batch: int, n: int, d: int, gen: torch.Generator) -> Tensor:
    """(batch, n, d) i.i.d. N(0, 1) tokens in float64."""
    return torch.randn(batch, n, d, generator=gen, dtype=torch.float64)


def single_head_attention(x: Tensor, w_qk: Tensor) -> Tensor:
    """A = softmax(x W_QK x^T / sqrt(d)) for x (B, n, d): weights (B, n, n) from the project's
    reference attention."""
    if x.dim() != 3 or w_qk.shape != (x.shape[-1], x.shape[-1]):
        raise ValueError(f"x must be (B, n, d) and w_qk (d, d), got {tuple(x.shape)}, "
                         f"{tuple(w_qk.shape)}")
    q = (x @ w_qk)[:, None]  # (B, 1, n, d)
    k = x[:, None]
    # the default scale 1/sqrt(d_k), d_k = d: 004:902's 1/sqrt(d)
    out = scaled_dot_product_attention(q, k, k, return_weights=True, backend="reference")
    assert out.weights is not None
    return out.weights[:, 0]


def seed_kappa(w_qk: Tensor) -> float:
    """The third seed's kappa = lambda_1 / sum_i lambda_i, eigenvalues sorted by value (real
    parts of the general eigen-solver; 004:779, 004:952)."""
    eig = torch.linalg.eigvals(w_qk).real
    return float(eig.max() / eig.sum())
