"""Baseline in-context regressors: OLS, ridge, GD, dMMSE, k-NN and averaging.

Shapes: context x (B, n, d), y (B, n); query x_query (B, d); predictions (B,). Every function
accepts an empty context (n = 0), where it returns the prior prediction.

- OLS: minimum-norm least squares w = X^+ y (Garg et al. 2022 "least squares").
- Ridge: w = (X^T X + lambda I)^{-1} X^T y. With w ~ N(0, tau^2 I) and noise variance sigma^2 it
  is the posterior mean, hence Bayes optimal, for lambda = sigma^2 / tau^2 (Raventos et al. 2023
  use lambda = 0.25 with tau = 1).
- GD: k steps of w <- w - eta (1/n) X^T (X w - y) from 0; the line-searched step minimises the
  squared error of the one-step prediction over a set of prompts (von Oswald et al. 2023).
- dMMSE: posterior mean under the discrete uniform prior over a task pool {w_m} (Raventos et al.
  2023): p(m | D) ~ exp(-sum_i (y_i - w_m^T x_i)^2 / (2 sigma^2)), y_hat = sum_m p(m | D) w_m^T x_q.
  Computed in batch chunks so that B x n x M never sits in memory at once.
- k-NN: mean label of the k nearest context inputs (Garg et al. 2022 use k = 3).
- Averaging: y_hat = x_q^T (1/n) sum_i y_i x_i (Garg et al. 2022).

Risks given the inputs (X, x_q) under w ~ N(0, tau^2 I), noise N(0, sigma^2) (Raventos et al.
2023; 000 §8.3.6 "隐式贝叶斯推断"): a predictor linear in the labels, y_hat = c^T y, has risk
E[(c^T y - y_q)^2 | X, x_q] = tau^2 |X^T c - x_q|^2 + sigma^2 |c|^2 + sigma^2, and the Bayes risk
is sigma^2 + x_q^T C x_q with C = (X^T X / sigma^2 + I / tau^2)^{-1} the posterior covariance.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from transformer_math.bugs import declare_bug, planted

RIDGE_LAMBDA_INVERTED = declare_bug(
    "icl.ridge-lambda-inverted",
    "the Bayes ridge parameter taken as tau^2 / sigma^2 instead of sigma^2 / tau^2",
    module=__name__,
    seen_in="the ratio is easy to invert: lambda is the noise-to-signal ratio (Raventos et al. "
    "2023 use lambda = sigma^2 = 0.25 with tau = 1)")
LINE_SEARCH_PER_PAIR = declare_bug(
    "icl.line-search-eta-per-pair",
    "the line search of the one-step-GD learning rate uses the seed's unnormalised loss "
    "sum_i (w^T x_i - y_i)^2 / 2 (gradient X^T y) while gd_predict divides by n: the returned "
    "eta is n times too small",
    module=__name__,
    seen_in="000 §8.3.6 writes L without 1/(2N) and absorbs N into eta (FACTS.md); mixing the "
    "two conventions scales eta by N",
    test="tests/claims/icl/test_construction_checks.py"
    "::test_line_search_minimises_the_layers_error")

PredictFn = Callable[[Tensor, Tensor, Tensor], Tensor]


def _check(x: Tensor, y: Tensor, x_query: Tensor) -> None:
    if x.dim() != 3:
        raise ValueError(f"x must have shape (batch, n, d), got {tuple(x.shape)}")
    b, n, d = x.shape
    if y.shape != (b, n):
        raise ValueError(f"y must have shape ({b}, {n}), got {tuple(y.shape)}")
    if x_query.shape != (b, d):
        raise ValueError(f"x_query must have shape ({b}, {d}), got {tuple(x_query.shape)}")


def _apply(w: Tensor, x_query: Tensor) -> Tensor:
    return (x_query * w).sum(-1)


def ols_weights(x: Tensor, y: Tensor) -> Tensor:
    """Minimum-norm least-squares solution X^+ y, shape (B, d)."""
    if x.shape[1] == 0:
        return torch.zeros(x.shape[0], x.shape[2], dtype=x.dtype)
    return (torch.linalg.pinv(x) @ y.unsqueeze(-1)).squeeze(-1)


def ols_predict(x: Tensor, y: Tensor, x_query: Tensor) -> Tensor:
    _check(x, y, x_query)
    return _apply(ols_weights(x, y), x_query)


def bayes_ridge_lambda(noise_var: float, tau2: float) -> float:
    """The ridge parameter of the posterior mean under w ~ N(0, tau^2 I) and noise variance
    sigma^2: lambda = sigma^2 / tau^2 (the MAP / posterior-mean identity
    (X^T X / sigma^2 + I / tau^2)^{-1} X^T y / sigma^2 = (X^T X + (sigma^2/tau^2) I)^{-1} X^T y)."""
    if not (noise_var > 0 and tau2 > 0):
        raise ValueError(f"noise_var and tau2 must be > 0, got {noise_var} and {tau2}")
    if planted(RIDGE_LAMBDA_INVERTED):  # planted bug: falsifier of icl.bayes-posterior
        return tau2 / noise_var
    return noise_var / tau2


def ridge_weights(x: Tensor, y: Tensor, lam: float) -> Tensor:
    """(X^T X + lam I)^{-1} X^T y, shape (B, d); ``lam`` must be > 0."""
    if not lam > 0:
        raise ValueError(f"lam must be > 0 (use ols_weights for lam = 0), got {lam}")
    d = x.shape[-1]
    gram = x.transpose(1, 2) @ x + lam * torch.eye(d, dtype=x.dtype)
    return torch.linalg.solve(gram, (x.transpose(1, 2) @ y.unsqueeze(-1))).squeeze(-1)


def ridge_predict(x: Tensor, y: Tensor, x_query: Tensor, lam: float) -> Tensor:
    _check(x, y, x_query)
    return _apply(ridge_weights(x, y, lam), x_query)


def gd_predict(x: Tensor, y: Tensor, x_query: Tensor, eta: float, num_steps: int = 1) -> Tensor:
    """Prediction of w_k after ``num_steps`` GD steps on 1/(2n) |X w - y|^2 from w_0 = 0."""
    _check(x, y, x_query)
    n = max(x.shape[1], 1)
    w = torch.zeros(x.shape[0], x.shape[2], dtype=x.dtype)
    for _ in range(num_steps):
        residual = (x @ w.unsqueeze(-1)).squeeze(-1) - y
        w = w - eta * (x.transpose(1, 2) @ residual.unsqueeze(-1)).squeeze(-1) / n
    return _apply(w, x_query)


def line_search_gd_eta(x: Tensor, y: Tensor, x_query: Tensor, y_query: Tensor) -> float:
    """The eta minimising sum_b (eta s_b - y_q,b)^2 with s = x_q^T X^T y / n (one GD step).

    Exact line search on the batch: eta* = sum(s y_q) / sum(s^2), the stationary point of a
    quadratic in eta with positive curvature sum(s^2), hence its minimiser.
    """
    _check(x, y, x_query)
    s = gd_predict(x, y, x_query, eta=1.0, num_steps=1)
    eta = float((s * y_query).sum() / (s * s).sum())
    if planted(LINE_SEARCH_PER_PAIR):  # planted bug (killed by a test, see LINE_SEARCH_PER_PAIR)
        eta /= max(x.shape[1], 1)
    return eta


def dmmse_posterior(
    x: Tensor, y: Tensor, task_pool: Tensor, noise_var: float, *, max_elements: int = 4_000_000
) -> Tensor:
    """Posterior over the M pool tasks given the context, shape (B, M) (uniform prior).

    log p(m | D) = -sum_i (y_i - w_m^T x_i)^2 / (2 sigma^2) + const; softmax over m. Batch rows
    are processed in chunks of at most ``max_elements`` residuals (B_chunk * n * M).
    """
    if not noise_var > 0:
        raise ValueError(f"noise_var must be > 0 for the dMMSE posterior, got {noise_var}")
    if task_pool.dim() != 2 or task_pool.shape[1] != x.shape[-1]:
        raise ValueError(
            f"task_pool must have shape (M, {x.shape[-1]}), got {tuple(task_pool.shape)}"
        )
    b, n, _ = x.shape
    m = task_pool.shape[0]
    pool = task_pool.to(x.dtype)
    chunk = max(1, max_elements // max(1, n * m))
    out = []
    for start in range(0, b, chunk):
        xs, ys = x[start : start + chunk], y[start : start + chunk]
        residual = ys.unsqueeze(-1) - xs @ pool.T  # (b_c, n, M)
        log_post = -(residual**2).sum(1) / (2 * noise_var)  # (b_c, M)
        out.append(torch.softmax(log_post, dim=-1))
    return torch.cat(out)


def dmmse_predict(
    x: Tensor, y: Tensor, x_query: Tensor, task_pool: Tensor, noise_var: float
) -> Tensor:
    """Posterior-mean prediction sum_m p(m | D) w_m^T x_q (Raventos et al. 2023)."""
    _check(x, y, x_query)
    posterior = dmmse_posterior(x, y, task_pool, noise_var)  # (B, M)
    task_predictions = x_query @ task_pool.to(x.dtype).T  # (B, M)
    return (posterior * task_predictions).sum(-1)


def knn_predict(x: Tensor, y: Tensor, x_query: Tensor, k: int = 3) -> Tensor:
    """Mean label of the k nearest context inputs (all of them when n < k; 0 when n = 0)."""
    _check(x, y, x_query)
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    n = x.shape[1]
    if n == 0:
        return torch.zeros(x.shape[0], dtype=x.dtype)
    dist = ((x - x_query.unsqueeze(1)) ** 2).sum(-1)  # (B, n)
    index = dist.topk(min(k, n), dim=-1, largest=False).indices
    return y.gather(1, index).mean(-1)


def averaging_predict(x: Tensor, y: Tensor, x_query: Tensor) -> Tensor:
    """y_hat = x_q^T (1/n) sum_i y_i x_i (0 for an empty context)."""
    _check(x, y, x_query)
    return gd_predict(x, y, x_query, eta=1.0, num_steps=1)


def prefix_predictions(predict: PredictFn, x: Tensor, y: Tensor) -> Tensor:
    """Predict y_i from the first i - 1 pairs, for every i: (B, K) (the autoregressive setting).

    ``predict(x_context, y_context, x_query)``; position 0 gets the empty-context prediction.
    """
    if x.dim() != 3 or y.shape != x.shape[:2]:
        raise ValueError(
            f"x (B, K, d) and y (B, K) expected, got {tuple(x.shape)}, {tuple(y.shape)}"
        )
    return torch.stack([predict(x[:, :i], y[:, :i], x[:, i]) for i in range(x.shape[1])], dim=1)


def linear_risk_given_inputs(
    x: Tensor, x_query: Tensor, coefficients: Tensor, tau2: float, noise_var: float
) -> Tensor:
    """Risk of y_hat = c^T y given (X, x_q): tau^2 |X^T c - x_q|^2 + sigma^2 (|c|^2 + 1), (B,).

    ``coefficients`` c is (B, n); the expectation is over w ~ N(0, tau^2 I) and the noise.
    """
    if coefficients.shape != x.shape[:2] or x_query.shape != (x.shape[0], x.shape[2]):
        raise ValueError(f"x (B, n, d), x_query (B, d), coefficients (B, n) expected, got "
                         f"{tuple(x.shape)}, {tuple(x_query.shape)}, {tuple(coefficients.shape)}")
    bias = torch.einsum("bkd,bk->bd", x, coefficients) - x_query  # (B, d)
    return tau2 * (bias**2).sum(-1) + noise_var * (coefficients**2).sum(-1) + noise_var


def ridge_risk_given_inputs(
    x: Tensor, x_query: Tensor, lam: float, tau2: float, noise_var: float
) -> Tensor:
    """Exact risk of ``ridge_predict`` given (X, x_q), (B,): ridge is linear in the labels, its
    coefficients c are read off with unit label vectors."""
    units = torch.eye(x.shape[1], dtype=x.dtype)
    coef = torch.stack(
        [ridge_predict(x, units[j].expand(x.shape[:2]), x_query, lam) for j in range(x.shape[1])],
        -1,
    )  # (B, n)
    return linear_risk_given_inputs(x, x_query, coef, tau2, noise_var)


def bayes_risk_given_inputs(x: Tensor, x_query: Tensor, tau2: float, noise_var: float) -> Tensor:
    """Bayes risk given (X, x_q): sigma^2 + x_q^T (X^T X / sigma^2 + I / tau^2)^{-1} x_q, (B,)."""
    eye = torch.eye(x.shape[-1], dtype=x.dtype)
    post_cov = torch.linalg.inv(x.transpose(1, 2) @ x / noise_var + eye / tau2)  # (B, d, d)
    return noise_var + torch.einsum("bd,bde,be->b", x_query, post_cov, x_query)
