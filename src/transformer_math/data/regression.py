"""Linear-regression prompts for in-context learning, with explicit generators.

A prompt is N pairs (x_i, y_i) with y_i = w^T x_i + eps_i, eps_i ~ N(0, noise_var), plus (when
asked for) a query x_q with target y_q. Sources: Garg et al. 2022 (x, w ~ N(0, I)); von Oswald et
al. 2023 (x ~ U(-a, a)^d); Ahn et al. 2023 (x ~ N(0, Sigma)); Raventos et al. 2023 (w drawn from a
fixed pool of M tasks, noise variance 0.25). Everything draws from the ``generator`` argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

LABEL_BEFORE_INPUT = declare_bug(
    "data.regression-label-before-input",
    "the interleaved prompt puts y_i BEFORE x_i (positions 2i and 2i + 1 swapped), so a causal "
    "model read at the x_i token sees its own target y_i: the prediction leaks the label",
    module=__name__,
    seen_in="an off-by-one in the prompt layout of Garg et al. 2022 style in-context regression")
CHOLESKY_TRANSPOSED = declare_bug(
    "data.regression-cholesky-transposed",
    "x ~ N(0, Sigma) drawn as z L with L = cholesky(Sigma) instead of z L^T: the rows of x get "
    "the covariance L^T L, which has Sigma's eigenvalues but not its eigenvectors (equal to "
    "Sigma only when Sigma is diagonal)",
    module=__name__,
    seen_in="row-vector versus column-vector convention: x = L z for a column z is x^T = z^T "
    "L^T for a row; dropping the transpose is the classic slip",
    test="tests/claims/icl/test_trained_bugs.py::test_gaussian_prompts_have_covariance_sigma")
UNIFORM_NOT_CENTRED = declare_bug(
    "data.regression-uniform-not-centred",
    "x ~ U(-a, a)^d drawn as a U(0, 1)^d (the 2 u - 1 dropped): the inputs have mean a/2 and "
    "second moment (a^2/12) I + (a^2/4) 1 1^T instead of (a^2/3) I",
    module=__name__,
    seen_in="torch.rand is U(0, 1); forgetting to centre it is a common slip",
    test="tests/claims/icl/test_trained_bugs.py::test_uniform_prompts_are_centred")

XDistribution = Literal["gaussian", "uniform"]


@dataclass(frozen=True)
class RegressionBatch:
    """x (B, N, d), y (B, N), w (B, d); the query is the last pair when split off."""

    x: Tensor
    y: Tensor
    w: Tensor

    def split_query(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(x_context (B, N-1, d), y_context (B, N-1), x_query (B, d), y_query (B,))."""
        return self.x[:, :-1], self.y[:, :-1], self.x[:, -1], self.y[:, -1]


def make_task_pool(
    num_tasks: int, dim: int, *, generator: torch.Generator, dtype: torch.dtype = torch.float32
) -> Tensor:
    """M task vectors w_m ~ N(0, I_d) drawn once (Raventos et al. 2023): (M, d)."""
    if num_tasks <= 0 or dim <= 0:
        raise ValueError(f"num_tasks and dim must be positive, got {num_tasks} and {dim}")
    return torch.randn(num_tasks, dim, generator=generator, dtype=dtype)


def sample_regression(
    batch_size: int,
    num_points: int,
    dim: int,
    *,
    generator: torch.Generator,
    x_distribution: XDistribution = "gaussian",
    x_range: float = 1.0,
    sigma: Tensor | None = None,
    noise_var: float = 0.0,
    task_pool: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
) -> RegressionBatch:
    """Draw ``batch_size`` prompts of ``num_points`` pairs.

    x: ``gaussian`` gives N(0, sigma) (sigma defaults to I; it must be symmetric positive
    definite), ``uniform`` gives U(-x_range, x_range)^d. w: a fresh N(0, I) per prompt, or a
    uniformly chosen row of ``task_pool`` (M, d). y = x w + noise with variance ``noise_var``.
    """
    for name, value in (("batch_size", batch_size), ("num_points", num_points), ("dim", dim)):
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if noise_var < 0:
        raise ValueError(f"noise_var must be >= 0, got {noise_var}")
    if x_distribution == "gaussian":
        x = torch.randn(batch_size, num_points, dim, generator=generator, dtype=dtype)
        if sigma is not None:
            if sigma.shape != (dim, dim):
                raise ValueError(f"sigma must have shape ({dim}, {dim}), got {tuple(sigma.shape)}")
            chol = torch.linalg.cholesky(sigma.to(dtype))  # raises if not positive definite
            if planted(CHOLESKY_TRANSPOSED):  # planted bug: falsifier of icl.ahn-gamma-moment
                chol = chol.T  # x = z L: covariance L^T L
            x = x @ chol.T  # rows z^T L^T: covariance L L^T = Sigma
    elif x_distribution == "uniform":
        if sigma is not None:
            raise ValueError("sigma is only used with x_distribution='gaussian'")
        u = torch.rand(batch_size, num_points, dim, generator=generator, dtype=dtype)
        if not planted(UNIFORM_NOT_CENTRED):  # planted bug (icl.trained-matches-gd): not centred
            u = u * 2 - 1
        x = u * x_range
    else:
        raise ValueError(f"x_distribution must be 'gaussian' or 'uniform', got {x_distribution!r}")
    if task_pool is None:
        w = torch.randn(batch_size, dim, generator=generator, dtype=dtype)
    else:
        if task_pool.dim() != 2 or task_pool.shape[1] != dim:
            raise ValueError(f"task_pool must have shape (M, {dim}), got {tuple(task_pool.shape)}")
        index = torch.randint(task_pool.shape[0], (batch_size,), generator=generator)
        w = task_pool[index].to(dtype)
    y = (x @ w.unsqueeze(-1)).squeeze(-1)
    if noise_var > 0:
        y = y + noise_var**0.5 * torch.randn(
            batch_size, num_points, generator=generator, dtype=dtype
        )
    return RegressionBatch(x, y, w)


def interleave_regression_tokens(x: Tensor, y: Tensor) -> Tensor:
    """Prompt-as-sequence tokens (Garg et al. 2022): (B, K, D), (B, K) -> (B, 2K, 1 + D).

    x_i -> (0, x_i) at position 2i and y_i -> (y_i, 0, ..., 0) at position 2i + 1 (0-based i),
    so a causal model read at the x_i token sees x_1, y_1, ..., y_{i-1}, x_i but not y_i.
    """
    if x.dim() != 3 or y.shape != x.shape[:2]:
        raise ValueError(
            f"x (B, K, D) and y (B, K) expected, got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    b, k, d = x.shape
    zeros = x.new_zeros(b, k, 1)
    x_tokens = torch.cat([zeros, x], dim=-1)  # (B, K, 1+D)
    y_tokens = torch.cat([y.unsqueeze(-1), x.new_zeros(b, k, d)], dim=-1)  # (B, K, 1+D)
    if planted(LABEL_BEFORE_INPUT):  # planted bug: falsifier of icl.regression-prompt-causal
        return torch.stack([y_tokens, x_tokens], dim=2).reshape(b, 2 * k, 1 + d)
    return torch.stack([x_tokens, y_tokens], dim=2).reshape(b, 2 * k, 1 + d)  # (B, 2K, 1+D)
