"""theory.icl_baselines: OLS/ridge/k-NN/averaging, dMMSE, prefix predictions, line search, and the
exact risks given the inputs."""

from __future__ import annotations

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.data.regression import make_task_pool, sample_regression
from transformer_math.theory.icl_baselines import (
    averaging_predict,
    bayes_ridge_lambda,
    bayes_risk_given_inputs,
    dmmse_posterior,
    dmmse_predict,
    knn_predict,
    line_search_gd_eta,
    linear_risk_given_inputs,
    ols_predict,
    prefix_predictions,
    ridge_predict,
    ridge_risk_given_inputs,
)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_ridge_tends_to_ols_and_baselines() -> None:
    g = _gen(3)
    x = torch.randn(6, 10, 4, generator=g, dtype=torch.float64)
    y = torch.randn(6, 10, generator=g, dtype=torch.float64)
    xq = torch.randn(6, 4, generator=g, dtype=torch.float64)
    assert torch.allclose(ridge_predict(x, y, xq, 1e-10), ols_predict(x, y, xq), atol=1e-7)
    assert torch.allclose(knn_predict(x, y, x[:, 3], k=1), y[:, 3])  # the closest point's label
    assert torch.allclose(averaging_predict(x, y, xq), torch.einsum("bd,bnd,bn->b", xq, x, y) / 10)
    with pytest.raises(ValueError, match="lam"):
        ridge_predict(x, y, xq, 0.0)
    with pytest.raises(ValueError, match="x_query"):
        ols_predict(x, y, xq[:, :3])


def test_dmmse_single_task_returns_that_task() -> None:
    g = _gen(4)
    pool = make_task_pool(1, 3, generator=g, dtype=torch.float64)
    batch = sample_regression(
        5, 6, 3, generator=g, task_pool=pool, noise_var=0.25, dtype=torch.float64
    )
    x, y, xq, _ = batch.split_query()
    assert torch.allclose(dmmse_predict(x, y, xq, pool, 0.25), xq @ pool[0])
    pool8 = make_task_pool(8, 3, generator=g, dtype=torch.float64)
    post = dmmse_posterior(x, y, pool8, 0.25, max_elements=7)  # forces chunking
    assert torch.allclose(post, dmmse_posterior(x, y, pool8, 0.25))
    assert torch.allclose(post.sum(-1), torch.ones(5, dtype=torch.float64))


def test_prefix_predictions_and_line_search() -> None:
    batch = sample_regression(64, 8, 3, generator=_gen(6), dtype=torch.float64)
    preds = prefix_predictions(lambda a, b, c: ridge_predict(a, b, c, 0.25), batch.x, batch.y)
    assert preds.shape == (64, 8)
    assert torch.all(preds[:, 0] == 0)
    x, y, xq, yq = batch.split_query()
    eta = line_search_gd_eta(x, y, xq, yq)
    s = averaging_predict(x, y, xq)
    losses = [((e * s - yq) ** 2).mean() for e in (0.9 * eta, eta, 1.1 * eta)]
    assert losses[1] <= min(losses[0], losses[2])


def test_ridge_risk_given_inputs_matches_monte_carlo() -> None:
    """The closed form against a Monte Carlo average over (w, noise) for fixed inputs."""
    g = _gen(7)
    x = torch.randn(3, 5, 2, generator=g, dtype=torch.float64)
    xq = torch.randn(3, 2, generator=g, dtype=torch.float64)
    tau2, noise_var, draws = 2.0, 0.5, 200_000
    w = tau2**0.5 * torch.randn(draws, 3, 2, generator=g, dtype=torch.float64)
    y = torch.einsum("bnd,sbd->sbn", x, w) + noise_var**0.5 * torch.randn(
        draws, 3, 5, generator=g, dtype=torch.float64)
    yq = (xq * w).sum(-1) + noise_var**0.5 * torch.randn(draws, 3, generator=g,
                                                          dtype=torch.float64)
    pred = ridge_predict(x.expand(draws, 3, 5, 2).reshape(-1, 5, 2), y.reshape(-1, 5),
                         xq.expand(draws, 3, 2).reshape(-1, 2), 0.3).view(draws, 3)
    mc = ((pred - yq) ** 2).mean(0)
    exact = ridge_risk_given_inputs(x, xq, 0.3, tau2, noise_var)
    assert torch.allclose(mc, exact, rtol=0.02)


def test_bayes_risk_is_ridge_at_the_posterior_ratio_and_a_lower_bound() -> None:
    g = _gen(8)
    x = torch.randn(50, 6, 4, generator=g, dtype=torch.float64)
    xq = torch.randn(50, 4, generator=g, dtype=torch.float64)
    tau2, noise_var = 1.0, 0.25
    bayes = bayes_risk_given_inputs(x, xq, tau2, noise_var)
    assert torch.allclose(ridge_risk_given_inputs(x, xq, noise_var / tau2, tau2, noise_var), bayes)
    for lam in (0.05, 1.0, 4.0):  # any other ridge (or linear predictor) is worse
        assert torch.all(ridge_risk_given_inputs(x, xq, lam, tau2, noise_var) > bayes)
    zero = linear_risk_given_inputs(x, xq, torch.zeros(50, 6, dtype=torch.float64), tau2,
                                    noise_var)
    assert torch.allclose(zero, tau2 * (xq**2).sum(-1) + noise_var)  # predict 0: E y_q^2
    with pytest.raises(ValueError, match="coefficients"):
        linear_risk_given_inputs(x, xq, torch.zeros(50, 5), tau2, noise_var)


def test_planted_line_search_eta_is_n_times_too_small() -> None:
    batch = sample_regression(256, 9, 3, generator=_gen(11), dtype=torch.float64)
    x, y, xq, yq = batch.split_query()
    eta = line_search_gd_eta(x, y, xq, yq)
    s = averaging_predict(x, y, xq)
    assert float(((eta * s - yq) ** 2).mean()) <= float(((1.01 * eta * s - yq) ** 2).mean())
    with plant("icl.line-search-eta-per-pair"):
        assert line_search_gd_eta(x, y, xq, yq) == pytest.approx(eta / 8)


def test_planted_ridge_lambda_inverted() -> None:
    assert bayes_ridge_lambda(0.25, 1.0) == 0.25  # sigma^2 / tau^2
    assert bayes_ridge_lambda(0.5, 2.0) == 0.25
    with plant("icl.ridge-lambda-inverted"):
        assert bayes_ridge_lambda(0.25, 1.0) == 4.0
    with pytest.raises(ValueError):
        bayes_ridge_lambda(0.0, 1.0)
