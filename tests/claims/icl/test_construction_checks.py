"""Implementation checks of the icl construction and baselines that are not claims (issue 31):
each asserts the property on the library code and, with the bug planted, that the check fails.

- the line-searched GD step (``theory.icl_baselines.line_search_gd_eta``) minimises the batch
  error of the constructed layer, found by a numerical search of that error (retired claim
  ``icl.line-searched-gd``; bug ``icl.line-search-eta-per-pair``);
- Ahn et al.'s Gamma has the isotropic closed form Gamma^{-1} = n / (n + d + 1) I (bug
  ``icl.ahn-gamma-is-sigma``; the Monte Carlo moment is claim ``icl.ahn-gamma-moment``);
- the Newton-Schulz initial guess contracts, |I - M A_0| < 1 (bug ``icl.newton-schulz-scale``);
- the one-step-GD construction needs the LABEL as the value; the seed's schematic W_V
  (000:929, "示意") assembles only at d = 1 and there carries the feature (retired claim
  ``icl.seed-value-matrix``; bug ``icl.gd-value-sign``).
"""

from __future__ import annotations

import math

import torch

from transformer_math.bugs import plant
from transformer_math.nn.init import no_init_draws
from transformer_math.nn.linear_self_attention import LinearSelfAttention, regression_tokens
from transformer_math.theory.icl_baselines import line_search_gd_eta
from transformer_math.theory.icl_construction import (
    ahn_optimal_preconditioner,
    gd_iterates,
    newton_schulz_initial,
    one_step_gd_weights,
)


def constructed(dim: int, eta: float, n: int) -> LinearSelfAttention:
    with no_init_draws():
        model = LinearSelfAttention(dim + 1, 1, dtype=torch.float64)
    model.layers[0].load_weights(*one_step_gd_weights(dim, eta, n).as_tuple())
    return model


def _line_search_problem() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(509)
    dim, n, batch = 3, 10, 4096
    x = torch.rand(batch, n, dim, generator=g, dtype=torch.float64) * 2 - 1
    w = torch.randn(batch, dim, generator=g, dtype=torch.float64)
    xq = torch.rand(batch, dim, generator=g, dtype=torch.float64) * 2 - 1
    return x, (x @ w.unsqueeze(-1)).squeeze(-1), xq, (xq * w).sum(-1)


def _layer_argmin(x: torch.Tensor, y: torch.Tensor, xq: torch.Tensor, yq: torch.Tensor) -> float:
    """The step minimising the constructed layer's batch squared error, by golden-section
    search on the layer's own predictions (no closed form)."""
    dim, n = x.shape[2], x.shape[1]
    tokens = regression_tokens(x, y, xq)

    def loss(eta: float) -> float:
        with torch.no_grad():
            return float(((constructed(dim, eta, n).predict(tokens) - yq) ** 2).mean())

    lo, hi = 0.0, 10.0
    phi = (math.sqrt(5) - 1) / 2
    a, b = hi - phi * (hi - lo), lo + phi * (hi - lo)
    fa, fb = loss(a), loss(b)
    for _ in range(50):  # the bracket shrinks to 10 * 0.618^50 ~ 4e-10
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - phi * (hi - lo)
            fa = loss(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + phi * (hi - lo)
            fb = loss(b)
    return (lo + hi) / 2


def test_line_search_minimises_the_layers_error() -> None:
    """Bug icl.line-search-eta-per-pair: the line search's eta n times too small."""
    x, y, xq, yq = _line_search_problem()
    argmin = _layer_argmin(x, y, xq, yq)
    assert math.isclose(line_search_gd_eta(x, y, xq, yq), argmin, rel_tol=1e-6)
    with plant("icl.line-search-eta-per-pair"):
        assert not math.isclose(line_search_gd_eta(x, y, xq, yq), argmin, rel_tol=1e-2)


def test_ahn_gamma_has_the_isotropic_closed_form() -> None:
    """Bug icl.ahn-gamma-is-sigma: Gamma replaced by Sigma (Gamma^{-1} = I at Sigma = I)."""
    for d, n in ((2, 10), (4, 10), (3, 40)):
        eye = torch.eye(d, dtype=torch.float64)
        expected = n / (n + d + 1) * eye
        assert torch.allclose(ahn_optimal_preconditioner(eye, n), expected, atol=1e-12)
        with plant("icl.ahn-gamma-is-sigma"):
            assert not torch.allclose(ahn_optimal_preconditioner(eye, n), expected, atol=1e-3)


def test_newton_schulz_initial_guess_contracts() -> None:
    """Bug icl.newton-schulz-scale: A_0 = M^T / |M|_1, |I - M A_0| > 1 for this M."""
    g = torch.Generator().manual_seed(508)
    d = 6
    q1, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    q2, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    m = q1 @ torch.diag(torch.logspace(0, 1.5, d, dtype=torch.float64)) @ q2.T
    eye = torch.eye(d, dtype=torch.float64)

    def contraction() -> float:
        return float(torch.linalg.matrix_norm(eye - m @ newton_schulz_initial(m), ord=2))

    assert contraction() < 1.0
    with plant("icl.newton-schulz-scale"):
        assert contraction() > 1.0


def seed_value_matrix(dim: int, eta: float, lower_left: torch.Tensor) -> torch.Tensor:
    """eta [[0_{d x d}, 0_{d x 1}], [lower_left, 0]] assembled block by block (000:929);
    raises (torch's shape check) when ``lower_left`` is not 1 x d, the label row's width."""
    top = torch.zeros(dim, dim + 1, dtype=torch.float64)
    bottom = torch.cat([lower_left, torch.zeros(lower_left.shape[0], 1, dtype=torch.float64)],
                       dim=1)
    return eta * torch.cat([top, bottom], dim=0)


def _buildable(dim: int) -> bool:
    try:
        w = seed_value_matrix(dim, 1.0, torch.eye(dim, dtype=torch.float64).T)
    except RuntimeError:
        return False
    return tuple(w.shape) == (dim + 1, dim + 1)


def _one_layer_error(dim: int, value: torch.Tensor | None, g: torch.Generator) -> float:
    """max |y_hat - x_q^T w_1| of one layer: the construction, or its W_V replaced by ``value``
    (with P = (1/N) e e^T, the eta living in the value)."""
    eta, n = 0.7, 12
    weights = one_step_gd_weights(dim, eta, n)
    with no_init_draws():
        model = LinearSelfAttention(dim + 1, 1, dtype=torch.float64)
    if value is None:
        model.layers[0].load_weights(*weights.as_tuple())
    else:
        projection = torch.zeros(dim + 1, dim + 1, dtype=torch.float64)
        projection[dim, dim] = 1.0 / n
        model.layers[0].load_weights(weights.key, weights.query, value, projection)
    x = torch.randn(64, n, dim, generator=g, dtype=torch.float64)
    y = torch.randn(64, n, generator=g, dtype=torch.float64)
    xq = torch.randn(64, dim, generator=g, dtype=torch.float64)
    with torch.no_grad():
        pred = model.predict(regression_tokens(x, y, xq))
    w1 = gd_iterates(x, y, eta, 1)[1]  # GD from the residuals
    return float((pred - (xq * w1).sum(-1)).abs().max())


def test_one_step_gd_needs_the_label_as_value() -> None:
    """Bug icl.gd-value-sign: W_V = [[0,0],[0,+1]], the layer stores the negated prediction."""
    g = torch.Generator().manual_seed(521)
    assert max(_one_layer_error(d, None, g) for d in range(1, 9)) < 1e-10
    # the seed's schematic block assembles only at d = 1, and there it reads the feature
    assert _buildable(1) and not any(_buildable(d) for d in range(2, 9))
    w = seed_value_matrix(1, 0.5, torch.eye(1, dtype=torch.float64))
    assert torch.equal(w, torch.tensor([[0.0, 0.0], [0.5, 0.0]], dtype=torch.float64))
    for d in (1, 3):  # the features as value (a row of ones at d = 3) miss the GD step by O(1)
        wrong = seed_value_matrix(d, 0.7, torch.ones(1, d, dtype=torch.float64))
        assert _one_layer_error(d, wrong, g) > 0.1
    with plant("icl.gd-value-sign"):
        assert _one_layer_error(3, None, g) > 0.1
