"""Associative memories storing random key-value pairs: outer product vs gated MLP.

Math (003 concept page, "联想记忆视角"; the associative-memory tutorial it cites; Kohonen 1972,
Hopfield 1982). Store N pairs (k_i, v_i) of unit vectors in R^d.

Outer-product (linear) memory: W = sum_i v_i k_i^T (d x d parameters). Querying with a stored key,

    W k_i = v_i + sum_{j != i} (k_j^T k_i) v_j   (signal + crosstalk).

For keys uniform on the sphere E[(k_j^T k_i)^2] = 1/d, and for independent random unit values the
crosstalk has E|c_i|^2 = (N - 1)/d, so

    signal-to-crosstalk = 1 / sqrt((N - 1)/d) = sqrt(d / (N - 1)),
    cos(W k_i, v_i) ~ 1 / sqrt(1 + (N - 1)/d),

so crosstalk is as large as the signal at N = d + 1: the capacity threshold of the tutorial 003
cites ("interference equals signal", 003:52). That threshold is conservative: decoding by the
nearest stored value, argmax_j v_j^T (W k_i), still succeeds there. The score of the right value
is s_i = 1 + v_i^T c_i ~ N(1, (N - 1)/d^2); a wrong one is s_j = v_j^T W k_i with variance
sigma^2 = 2/d + (N - 2)/d^2 (v_j^T v_i and k_j^T k_i, 1/d each, plus the other pairs). Treating
the s_j as independent Gaussians,

    P(wrong value) ~ 1 - E_{s_i}[Phi(s_i / sigma)^(N - 1)]       (:func:`predicted_nearest_error`)

which is ~2e-3 at N = d = 64 and grows only when sigma ~ 1/sqrt(2 ln N), i.e. N of order
d^2 / (2 ln N). (Inner products of unit vectors are bounded, so their tails are lighter than the
Gaussian's: the estimate over-states the error, measured ~2-4x in the tails.) The prediction
needs nearly orthogonal keys: correlated keys (a shared component, pairwise cosine c) add
crosstalk of order (N - 1) c^2, far above (N - 1)/d.

Gated MLP memory (a hand-set construction, not a learned MLP; no claim rests on it since issue
14): hidden units h_j = relu(k_j^T x - tau) / (1 - tau), output sum_j v_j h_j
(W_in = K, W_out = V^T: 2 N d parameters). The gate opens only when the query is close to k_j:
for a stored key the wrong units see k_j^T k_i ~ N(0, 1/d), which is below tau = 0.5 except with
probability ~exp(-d tau^2 / 2), so the nonlinearity removes most of the interference the linear
memory suffers ("MLP 用非线性门控减少检索干扰"). At equal size (2 N d = d^2, N = d/2 pairs) it
retrieves almost perfectly where the outer-product memory is already near its limit.

Boundary (003): these are estimates for random keys queried with stored keys, with the threshold
"interference equals signal"; they are not bounds on what a trained model memorises.

No claim rests on this module since issue 31: ``memory.outer-product-crosstalk`` was retired to
``tests/claims/memory/test_crosstalk.py`` (003:52 only reports the tutorial's assumptions, so no
seed statement was at risk; what it checked of this module is that test).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

# Planted bug (transformer_math.bugs): off unless a falsifier or `tmath mutants` plants it.
TRANSPOSED = declare_bug(
    "memory.outer-product-transposed",
    "the outer-product memory stores W = sum_i k_i v_i^T (keys and values swapped) instead of "
    "sum_i v_i k_i^T", module=__name__,
    seen_in="the row/column-vector convention slip of Hebbian / fast-weight memories (x W vs W x; "
    "nn.Linear stores the transpose)",
    test="tests/claims/memory/test_crosstalk.py::"
    "test_outer_product_transposed_fails_the_crosstalk_checks")


def random_unit_vectors(
    n: int,
    dim: int,
    *,
    generator: torch.Generator,
    correlation: float = 0.0,
    dtype: torch.dtype = torch.float64,
) -> Tensor:
    """n unit vectors in R^dim, uniform on the sphere (``correlation`` = 0) or sharing a common
    random direction u with weight sqrt(correlation) (pairwise cosine ~ correlation)."""
    if n < 1 or dim < 1:
        raise ValueError(f"n and dim must be >= 1, got n={n}, dim={dim}")
    if not 0.0 <= correlation < 1.0:
        raise ValueError(f"correlation must be in [0, 1), got {correlation}")
    g = torch.randn(n, dim, generator=generator, dtype=dtype)
    g = g / g.norm(dim=1, keepdim=True)
    if correlation > 0:
        u = torch.randn(dim, generator=generator, dtype=dtype)
        u = u / u.norm()
        g = math.sqrt(correlation) * u + math.sqrt(1.0 - correlation) * g
        g = g / g.norm(dim=1, keepdim=True)
    return g


def _check_pairs(keys: Tensor, values: Tensor) -> None:
    if keys.dim() != 2 or values.dim() != 2 or keys.shape[0] != values.shape[0]:
        raise ValueError(
            f"keys and values must have shapes (N, d_k) and (N, d_v), got {tuple(keys.shape)} "
            f"and {tuple(values.shape)}"
        )


class OuterProductMemory:
    """W = sum_i v_i k_i^T; ``retrieve(x) = W x`` for queries x of shape (..., d_k)."""

    def __init__(self, keys: Tensor, values: Tensor) -> None:
        _check_pairs(keys, values)
        self.weight = values.T @ keys  # (d_v, d_k)
        if planted(TRANSPOSED):  # planted bug, killed by tests/claims/memory/test_crosstalk.py
            self.weight = keys.T @ values

    @property
    def num_parameters(self) -> int:
        return self.weight.numel()

    def retrieve(self, x: Tensor) -> Tensor:
        return x @ self.weight.T


class GatedMLPMemory:
    """h = relu(K x - tau) / (1 - tau), out = V^T h: one gated hidden unit per stored pair.

    ``threshold`` tau in [0, 1). tau = 0 with ``gate=False`` is the identity gate, which makes
    the memory the outer-product memory again.
    """

    def __init__(self, keys: Tensor, values: Tensor, *, threshold: float = 0.5, gate: bool = True):
        _check_pairs(keys, values)
        if not 0.0 <= threshold < 1.0:
            raise ValueError(f"threshold must be in [0, 1), got {threshold}")
        self.w_in = keys  # (N, d_k)
        self.w_out = values.T  # (d_v, N)
        self.threshold = threshold
        self.gate = gate

    @property
    def num_parameters(self) -> int:
        return self.w_in.numel() + self.w_out.numel()

    def retrieve(self, x: Tensor) -> Tensor:
        pre = x @ self.w_in.T
        h = torch.relu(pre - self.threshold) / (1.0 - self.threshold) if self.gate else pre
        return h @ self.w_out.T


def predicted_crosstalk_rms(num_pairs: int, dim: int) -> float:
    """sqrt((N - 1)/d): RMS crosstalk relative to the signal of an outer-product memory."""
    if num_pairs < 1 or dim < 1:
        raise ValueError(f"num_pairs and dim must be >= 1, got {num_pairs}, {dim}")
    return math.sqrt((num_pairs - 1) / dim)


def _normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def predicted_nearest_error(num_pairs: int, dim: int, *, grid: int = 2001) -> float:
    """Gaussian-crosstalk estimate of P(argmax_j v_j^T W k_i != i) (see the module docstring).

    1 - E[Phi(s_i / sigma)^(N - 1)] with s_i ~ N(1, (N - 1)/d^2) and sigma^2 = 2/d + (N - 2)/d^2,
    the expectation by the trapezoid rule on z in [-8, 8] (``grid`` points).
    """
    if num_pairs < 2 or dim < 1:
        raise ValueError(f"need num_pairs >= 2 and dim >= 1, got {num_pairs}, {dim}")
    n, d = num_pairs, dim
    sigma = math.sqrt(2.0 / d + (n - 2) / d**2)
    sigma_i = math.sqrt((n - 1) / d**2)
    h = 16.0 / (grid - 1)
    total = 0.0
    for t in range(grid):
        z = -8.0 + t * h
        weight = (0.5 if t in (0, grid - 1) else 1.0) * h
        density = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        total += weight * density * _normal_cdf((1.0 + sigma_i * z) / sigma) ** (n - 1)
    return min(1.0, max(0.0, 1.0 - total))


def predicted_cosine(num_pairs: int, dim: int) -> float:
    """cos(W k_i, v_i) ~ 1 / sqrt(1 + (N - 1)/d) for the outer-product memory."""
    return 1.0 / math.sqrt(1.0 + predicted_crosstalk_rms(num_pairs, dim) ** 2)


@dataclass(frozen=True)
class RetrievalStats:
    mean_square_crosstalk: float  # mean_i |out_i - v_i|^2 / |v_i|^2
    mean_cosine: float  # mean_i cos(out_i, v_i)
    success_rate: float  # fraction with cos >= cos_threshold
    nearest_value_accuracy: float  # fraction whose closest stored value is v_i


def retrieval_stats(
    memory: OuterProductMemory | GatedMLPMemory,
    keys: Tensor,
    values: Tensor,
    *,
    cos_threshold: float = 0.9,
) -> RetrievalStats:
    """Query ``memory`` with every stored key and compare with the stored values."""
    out = memory.retrieve(keys)
    err = (out - values).pow(2).sum(-1) / values.pow(2).sum(-1)
    cos = torch.nn.functional.cosine_similarity(out, values, dim=-1)
    nearest = (out @ values.T).argmax(dim=-1)
    correct = nearest == torch.arange(values.shape[0])
    return RetrievalStats(
        mean_square_crosstalk=float(err.mean()),
        mean_cosine=float(cos.mean()),
        success_rate=float((cos >= cos_threshold).to(torch.float64).mean()),
        nearest_value_accuracy=float(correct.to(torch.float64).mean()),
    )
