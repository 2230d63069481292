"""Nadaraya-Watson kernel regression with pluggable kernels (the kernel view of attention).

Math (000 §8.3.2, theory A; Nadaraya 1964, Watson 1964; Tsai et al. 2019). Given data
(x_j, y_j), j = 1..n, and a kernel kappa >= 0, the estimate at x is

    f_hat(x) = sum_j kappa(x, x_j) y_j / sum_j kappa(x, x_j).

With kappa(x, x') = exp((x W_Q)(x' W_K)^T / sqrt(d_k)) (:class:`SoftmaxAttentionKernel`), x the
query token and (x_j, v_j) the key tokens and their values, f_hat is exactly one attention head's
output (``tests/nn/test_attention_kernel_identities.py`` checks this against
``MultiHeadAttention``). Other
kernels: Gaussian exp(-|x - x'|^2 / 2h^2) (equal to the softmax kernel after row normalisation
when all keys have equal norms, ``kernel.gaussian-equivalence``), linear 1 + x^T x' (the kernel of
linear attention with phi(x) = [1, x]; it can be negative, so the "weights" are signed), and
Epanechnikov max(0, 1 - |x - x'|^2 / h^2) (bounded support: only points within h contribute, the
sparse-attention analogue of 000 §8.3.2).

Here kernels are computed literally (exp of the raw logit, explicit pairwise differences), with
no max subtraction: this module is the independent side of the identity checks, not a fast path.
A query whose kernel row sums to zero (Epanechnikov with no point inside the bandwidth) gets a
zero estimate, the project's convention for "attends to nothing" (no NaN).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import torch
from torch import Tensor, nn

from transformer_math.bugs import declare_bug, planted

# Planted bugs (transformer_math.bugs): off unless a falsifier or `tmath mutants` plants them.
NORMALISE_OVER_QUERIES = declare_bug(
    "kernel-regression.normalise-over-queries",
    "Nadaraya-Watson weights divided by the column sums of the kernel matrix (over the queries) "
    "instead of the row sums (over the data points)", module=__name__,
    seen_in="the softmax-over-the-wrong-axis slip (dim=-2 for dim=-1), common in hand-written "
    "attention and kernel smoothers",
    test="tests/nn/test_attention_kernel_identities.py::test_attention_is_nadaraya_watson")
BANDWIDTH_UNSQUARED = declare_bug(
    "kernel-regression.gaussian-bandwidth-unsquared",
    "Gaussian kernel exp(-|x - x'|^2 / (2 h)) with the bandwidth not squared", module=__name__,
    seen_in="bandwidth h vs variance h^2 confused (sigma vs sigma^2 in RBF kernels, e.g. "
    "scikit-learn's gamma = 1/(2 sigma^2) parametrisation)",
    test="tests/nn/test_attention_kernel_identities.py::"
    "test_gaussian_kernel_uses_the_squared_bandwidth")


class Kernel(Protocol):
    def __call__(self, x_query: Tensor, x_data: Tensor) -> Tensor:
        """(..., T, d), (..., S, d) -> kernel matrix (..., T, S)."""
        ...


def _check_pair(x_query: Tensor, x_data: Tensor) -> None:
    for name, t in (("x_query", x_query), ("x_data", x_data)):
        if not isinstance(t, Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating torch.Tensor, got {type(t).__name__}")
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape (..., n, d), got {tuple(t.shape)}")
    if x_query.shape[-1] != x_data.shape[-1]:
        raise ValueError(
            f"x_query and x_data must share the feature dim, got {tuple(x_query.shape)} "
            f"and {tuple(x_data.shape)}"
        )


def _squared_distances(x_query: Tensor, x_data: Tensor) -> Tensor:
    """|x_i - x'_j|^2 from explicit differences (not the |a|^2 + |b|^2 - 2ab expansion)."""
    diff = x_query.unsqueeze(-2) - x_data.unsqueeze(-3)  # (..., T, S, d)
    return (diff * diff).sum(dim=-1)


def _check_bandwidth(bandwidth: float) -> float:
    if not (isinstance(bandwidth, int | float) and math.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be a finite number > 0, got {bandwidth!r}")
    return float(bandwidth)


class GaussianKernel:
    """kappa(x, x') = exp(-|x - x'|^2 / (2 h^2)), h = ``bandwidth``."""

    def __init__(self, bandwidth: float = 1.0) -> None:
        self.bandwidth = _check_bandwidth(bandwidth)

    def __call__(self, x_query: Tensor, x_data: Tensor) -> Tensor:
        _check_pair(x_query, x_data)
        variance = self.bandwidth**2
        if planted(BANDWIDTH_UNSQUARED):  # planted bug: killed by a test (issue 31)
            variance = self.bandwidth
        return torch.exp(-_squared_distances(x_query, x_data) / (2.0 * variance))


class EpanechnikovKernel:
    """kappa(x, x') = max(0, 1 - |x - x'|^2 / h^2): bounded support of radius h."""

    def __init__(self, bandwidth: float = 1.0) -> None:
        self.bandwidth = _check_bandwidth(bandwidth)

    def __call__(self, x_query: Tensor, x_data: Tensor) -> Tensor:
        _check_pair(x_query, x_data)
        return torch.clamp(1.0 - _squared_distances(x_query, x_data) / self.bandwidth**2, min=0.0)


class LinearKernel:
    """kappa(x, x') = offset + x^T x' (phi(x) = [sqrt(offset), x]); signed in general."""

    def __init__(self, offset: float = 1.0) -> None:
        if not math.isfinite(offset):
            raise ValueError(f"offset must be finite, got {offset}")
        self.offset = float(offset)

    def __call__(self, x_query: Tensor, x_data: Tensor) -> Tensor:
        _check_pair(x_query, x_data)
        return self.offset + torch.matmul(x_query, x_data.transpose(-2, -1))


class FeatureMapKernel:
    """kappa(x, x') = phi(x)^T phi(x') for an explicit feature map phi: (..., d) -> (..., m).

    The kernel of linear attention (000 §8.3.2 corollary 3): with phi = elu + 1, relu or
    Performer's positive random features, Nadaraya-Watson with this kernel is linear attention.
    """

    def __init__(self, feature_map: Callable[[Tensor], Tensor]) -> None:
        if not callable(feature_map):
            raise TypeError(f"feature_map must be callable, got {type(feature_map).__name__}")
        self.feature_map = feature_map

    def __call__(self, x_query: Tensor, x_data: Tensor) -> Tensor:
        _check_pair(x_query, x_data)
        return torch.matmul(self.feature_map(x_query), self.feature_map(x_data).transpose(-2, -1))


class SoftmaxAttentionKernel:
    """kappa(x, x') = exp(scale * (x W_Q + b_Q)(x' W_K + b_K)^T), the kernel of one attention head.

    ``w_q``, ``w_k``: (d, d_k) in the seed's right-multiplication convention (an ``nn.Linear``
    stores the transpose); ``scale`` defaults to 1/sqrt(d_k). Computed as a literal exponential:
    logits above ~709 overflow float64 (that is what attention's max subtraction avoids).
    """

    def __init__(
        self,
        w_q: Tensor,
        w_k: Tensor,
        *,
        b_q: Tensor | None = None,
        b_k: Tensor | None = None,
        scale: float | None = None,
    ) -> None:
        if w_q.dim() != 2 or w_k.dim() != 2 or w_q.shape != w_k.shape:
            raise ValueError(
                f"w_q and w_k must both have shape (d, d_k), got {tuple(w_q.shape)} and "
                f"{tuple(w_k.shape)}"
            )
        d_k = w_q.shape[1]
        for name, b in (("b_q", b_q), ("b_k", b_k)):
            if b is not None and tuple(b.shape) != (d_k,):
                raise ValueError(f"{name} must have shape ({d_k},), got {tuple(b.shape)}")
        self.w_q, self.w_k, self.b_q, self.b_k = w_q, w_k, b_q, b_k
        self.scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)

    @staticmethod
    def from_attention(
        module: nn.Module, head: int, *, scale: float | None = None
    ) -> SoftmaxAttentionKernel:
        """The kernel of query head ``head`` of a ``MultiHeadAttention`` (reads its weights).

        With grouped key/value heads the query head h uses key head h // (H / H_kv).
        """
        num_heads = int(module.num_heads)
        num_kv = int(module.num_kv_heads)
        d_k = int(module.head_dim)
        if not 0 <= head < num_heads:
            raise ValueError(f"head must be in [0, {num_heads}), got {head}")
        g = head // (num_heads // num_kv)
        wq = module.q_proj.weight[head * d_k : (head + 1) * d_k].T
        wk = module.k_proj.weight[g * d_k : (g + 1) * d_k].T
        q_bias, k_bias = module.q_proj.bias, module.k_proj.bias
        bq = None if q_bias is None else q_bias[head * d_k : (head + 1) * d_k]
        bk = None if k_bias is None else k_bias[g * d_k : (g + 1) * d_k]
        return SoftmaxAttentionKernel(wq, wk, b_q=bq, b_k=bk, scale=scale)

    def __call__(self, x_query: Tensor, x_data: Tensor) -> Tensor:
        _check_pair(x_query, x_data)
        q = torch.matmul(x_query, self.w_q.to(x_query.dtype))
        k = torch.matmul(x_data, self.w_k.to(x_data.dtype))
        if self.b_q is not None:
            q = q + self.b_q.to(q.dtype)
        if self.b_k is not None:
            k = k + self.b_k.to(k.dtype)
        return torch.exp(self.scale * torch.matmul(q, k.transpose(-2, -1)))


def _normaliser(k: Tensor) -> Tensor:
    """The Nadaraya-Watson denominator sum_j kappa(x_i, x_j) (..., T, 1); 1 where it is 0."""
    if planted(NORMALISE_OVER_QUERIES):  # planted bug: killed by a test (issue 31)
        den = k.sum(dim=-2, keepdim=True)
    else:
        den = k.sum(dim=-1, keepdim=True)
    return torch.where(den == 0, torch.ones_like(den), den)


def nadaraya_watson_weights(x_query: Tensor, x_data: Tensor, kernel: Kernel) -> Tensor:
    """Normalised weights kappa(x_i, x_j) / sum_j' kappa(x_i, x_j'), shape (..., T, S).

    Rows whose kernel sum is exactly zero get all-zero weights.
    """
    k = kernel(x_query, x_data)
    return k / _normaliser(k)


def nadaraya_watson(x_query: Tensor, x_data: Tensor, y_data: Tensor, kernel: Kernel) -> Tensor:
    """f_hat(x_i) = sum_j kappa(x_i, x_j) y_j / sum_j kappa(x_i, x_j); y_data (..., S, d_y)."""
    if y_data.shape[:-1] != x_data.shape[:-1]:
        raise ValueError(
            f"y_data must have shape (..., {x_data.shape[-2]}, d_y) matching x_data, "
            f"got {tuple(y_data.shape)}"
        )
    k = kernel(x_query, x_data)  # (..., T, S)
    if planted(NORMALISE_OVER_QUERIES):  # the same slip: weights normalised over the queries
        return torch.matmul(k / _normaliser(k), y_data)
    return torch.matmul(k, y_data) / _normaliser(k)


class NadarayaWatson(nn.Module):
    """A fitted Nadaraya-Watson regressor: ``fit(x, y)`` stores the data, ``forward(x)`` predicts.

    Example (Gaussian kernel of bandwidth 0.2 on 1-D data)::

        reg = NadarayaWatson(GaussianKernel(0.2)).fit(x_train, y_train)
        y_hat = reg(x_test)

    ``y`` may be (n,) or (n, d_y); predictions have the matching shape.
    """

    def __init__(self, kernel: Kernel) -> None:
        super().__init__()
        if not callable(kernel):
            raise TypeError(f"kernel must be callable, got {type(kernel).__name__}")
        self.kernel = kernel
        self.register_buffer("x_data", None)
        self.register_buffer("y_data", None)
        self._vector_target = False

    def fit(self, x: Tensor, y: Tensor) -> NadarayaWatson:
        if x.dim() != 2:
            raise ValueError(f"x must have shape (n, d), got {tuple(x.shape)}")
        if y.dim() not in (1, 2) or y.shape[0] != x.shape[0]:
            raise ValueError(
                f"y must have shape ({x.shape[0]},) or ({x.shape[0]}, d_y), got {tuple(y.shape)}"
            )
        self._vector_target = y.dim() == 1
        self.x_data = x
        self.y_data = y.unsqueeze(-1) if self._vector_target else y
        return self

    def forward(self, x_query: Tensor) -> Tensor:
        if self.x_data is None or self.y_data is None:
            raise ValueError("NadarayaWatson must be fitted (call fit(x, y)) before predicting")
        out = nadaraya_watson(x_query, self.x_data, self.y_data, self.kernel)
        return out.squeeze(-1) if self._vector_target else out
