"""theory.icl_construction: the GD construction in an LSA layer, Neumann sums, Newton-Schulz,
Ahn et al.'s Gamma."""

from __future__ import annotations

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.nn.linear_self_attention import LinearSelfAttention, regression_tokens
from transformer_math.theory.icl_construction import (
    ahn_gamma,
    gd_iterates,
    least_squares_terms,
    neumann_error_bound,
    neumann_partial_sums,
    newton_schulz_inverse,
    one_step_gd_weights,
    stacked_gd_weights,
)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _construct_model(dim: int, eta: float, n: int, layers: int) -> LinearSelfAttention:
    model = LinearSelfAttention(dim + 1, layers, generator=_gen(0), dtype=torch.float64)
    weights = stacked_gd_weights(dim, eta, n, layers)
    for layer, w in zip(model.layers, weights, strict=True):
        layer.load_weights(*w.as_tuple())
    return model


def _problem(seed: int, b: int, n: int, d: int) -> tuple[torch.Tensor, ...]:
    g = _gen(seed)
    return (torch.randn(b, n, d, generator=g, dtype=torch.float64),
            torch.randn(b, n, generator=g, dtype=torch.float64),
            torch.randn(b, d, generator=g, dtype=torch.float64))


@pytest.mark.parametrize(("dim", "n"), [(1, 1), (3, 8), (10, 10), (7, 25)])
def test_construction_equals_one_gd_step(dim: int, n: int) -> None:
    x, y, xq = _problem(dim * 100 + n, 16, n, dim)
    eta = 0.7
    with torch.no_grad():
        pred = _construct_model(dim, eta, n, 1).predict(regression_tokens(x, y, xq))
    w1 = gd_iterates(x, y, eta, 1)[1]
    assert torch.max(torch.abs(pred - (xq * w1).sum(-1))) < 1e-10
    # and it is the seed's formula eta/N x_q^T X^T y
    direct = eta / n * torch.einsum("bd,bnd,bn->b", xq, x, y)
    assert torch.max(torch.abs(pred - direct)) < 1e-10


@pytest.mark.parametrize("layers", [2, 3, 5])
def test_stacked_layers_equal_gd_steps(layers: int) -> None:
    x, y, xq = _problem(layers, 8, 12, 4)
    with torch.no_grad():
        pred = _construct_model(4, 0.5, 12, layers).predict(regression_tokens(x, y, xq))
    w_l = gd_iterates(x, y, 0.5, layers)[layers]
    assert torch.max(torch.abs(pred - (xq * w_l).sum(-1))) < 1e-10


def test_planted_value_sign_breaks_the_construction() -> None:
    x, y, xq = _problem(5, 8, 6, 3)
    expected = (xq * gd_iterates(x, y, 0.5, 1)[1]).sum(-1)
    with torch.no_grad():
        right = _construct_model(3, 0.5, 6, 1).predict(regression_tokens(x, y, xq))
        with plant("icl.gd-value-sign"):
            assert one_step_gd_weights(3, 0.5, 6).value[3, 3] == 1.0
            pred = _construct_model(3, 0.5, 6, 1).predict(regression_tokens(x, y, xq))
    assert torch.max(torch.abs(right - expected)) < 1e-12
    assert torch.max(torch.abs(pred - expected)) > 1e-3
    assert torch.allclose(pred, -expected)


def test_planted_newton_schulz_scale_diverges() -> None:
    q, _ = torch.linalg.qr(torch.randn(6, 6, generator=_gen(3), dtype=torch.float64))
    m = q @ torch.diag(torch.logspace(0, 1.5, 6, dtype=torch.float64)) @ q.T
    eye = torch.eye(6, dtype=torch.float64)
    assert torch.linalg.matrix_norm(eye - m @ newton_schulz_inverse(m, 0)[0], ord=2) < 1
    with plant("icl.newton-schulz-scale"):
        a0 = newton_schulz_inverse(m, 0)[0]
    assert torch.linalg.matrix_norm(eye - m @ a0, ord=2) > 1


def test_planted_gamma_is_sigma() -> None:
    sigma = torch.diag(torch.tensor([0.5, 2.0], dtype=torch.float64))
    gamma = ahn_gamma(sigma, 4)
    assert torch.allclose(gamma, 1.25 * sigma + 0.625 * torch.eye(2, dtype=torch.float64))
    with plant("icl.ahn-gamma-is-sigma"):
        assert torch.equal(ahn_gamma(sigma, 4), sigma)


def test_neumann_worked_example_ols_limit_and_bound() -> None:
    h = torch.tensor([[1.0]], dtype=torch.float64)
    b = torch.tensor([2.0], dtype=torch.float64)
    sums = neumann_partial_sums(h, b, 0.5, 4)[:, 0]
    assert torch.allclose(sums, torch.tensor([0.0, 1.0, 1.5, 1.75, 1.875], dtype=torch.float64))
    g = _gen(1)
    x = torch.randn(30, 4, generator=g, dtype=torch.float64)
    y = torch.randn(30, generator=g, dtype=torch.float64)
    hess, bb = least_squares_terms(x, y)
    eta = 1.0 / float(torch.linalg.eigvalsh(hess).max())
    partial = neumann_partial_sums(hess, bb, eta, 400)
    w_star = torch.linalg.solve(hess, bb)
    assert torch.allclose(partial[-1], w_star, atol=1e-8)
    errors = torch.linalg.vector_norm(partial - w_star, dim=-1)
    assert torch.all(errors <= neumann_error_bound(hess, w_star, eta, 400) * (1 + 1e-9) + 1e-12)
    # divergence beyond 2 / lambda_max
    w_bad = neumann_partial_sums(hess, bb, 2.2 / float(torch.linalg.eigvalsh(hess).max()), 200)[-1]
    assert torch.linalg.vector_norm(w_bad) > 1e3


def test_newton_schulz_squares_the_residual() -> None:
    g = _gen(2)
    m = torch.randn(5, 5, generator=g, dtype=torch.float64) + 5 * torch.eye(5, dtype=torch.float64)
    its = newton_schulz_inverse(m, 8)
    eye = torch.eye(5, dtype=torch.float64)
    r = [eye - m @ a for a in its]
    for t in range(4):
        assert torch.allclose(r[t + 1], r[t] @ r[t], atol=1e-12)
    assert torch.allclose(its[-1], torch.linalg.inv(m), atol=1e-10)


def test_ahn_gamma_isotropic() -> None:
    gamma = ahn_gamma(torch.eye(3, dtype=torch.float64), 10)
    assert torch.allclose(torch.linalg.inv(gamma), 10 / 14 * torch.eye(3, dtype=torch.float64))
