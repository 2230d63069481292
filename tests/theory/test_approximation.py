"""Approximation-rate calculator and explicit approximants."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.theory.approximation import (
    accuracy_for_neurons,
    bilinear_grid_approximant,
    neurons_for_accuracy,
    rate_exponent,
    relu_interpolant_1d,
)


def test_exercise_values():
    assert neurons_for_accuracy(0.1, 10, 2) == pytest.approx(1e5, rel=1e-12)
    assert neurons_for_accuracy(0.1, 10, 5) == pytest.approx(1e2, rel=1e-12)
    assert rate_exponent(10, 2) == 5.0
    assert accuracy_for_neurons(1e5, 10, 2) == pytest.approx(0.1, rel=1e-12)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"epsilon": 0.0, "dim": 1, "smoothness": 1}, "epsilon"),
    ({"epsilon": 1.5, "dim": 1, "smoothness": 1}, "epsilon"),
    ({"epsilon": 0.1, "dim": -1, "smoothness": 1}, "dim"),
    ({"epsilon": 0.1, "dim": 1, "smoothness": math.inf}, "smoothness"),
])
def test_calculator_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        neurons_for_accuracy(**kwargs)
    with pytest.raises(TypeError, match="dim"):
        rate_exponent("10", 2)  # type: ignore[arg-type]


def test_relu_interpolant_is_exact_at_knots_and_piecewise_linear():
    net = relu_interpolant_1d(lambda t: t**2, 4)
    knots = torch.linspace(-1, 1, 5, dtype=torch.float64)[:, None]
    with torch.no_grad():
        torch.testing.assert_close(net(knots), knots**2)
        mid = net(torch.tensor([[-0.75]], dtype=torch.float64))
    assert float(mid) == pytest.approx(0.625)  # chord between (-1, 1) and (-0.5, 0.25)
    assert net[0].out_features == 4


def test_bilinear_grid_is_exact_on_bilinear_functions():
    approx = bilinear_grid_approximant(lambda a, b: 1 + 2 * a - b + 3 * a * b, 3)
    pts = torch.rand(50, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2 - 1
    truth = 1 + 2 * pts[:, 0] - pts[:, 1] + 3 * pts[:, 0] * pts[:, 1]
    torch.testing.assert_close(approx(pts), truth)


def test_relu_coefficients_not_differenced_bug_and_the_correct_interpolant() -> None:
    """Planted bug approximation.relu-coeffs-not-differenced (both directions)."""
    from transformer_math.bugs import plant

    x = torch.linspace(-1, 1, 1001, dtype=torch.float64)[:, None]
    with torch.no_grad():
        good = float((relu_interpolant_1d(torch.sin, 31)(x) - torch.sin(x)).abs().max())
        with plant("approximation.relu-coeffs-not-differenced"):
            bad = float((relu_interpolant_1d(torch.sin, 31)(x) - torch.sin(x)).abs().max())
    assert good < 1e-3 < 1.0 < bad


def test_rate_calculators_refuse_results_outside_the_float_range() -> None:
    """Were OverflowError (eps^(-d/s) = 10^30000), ZeroDivisionError and a silent inf."""
    with pytest.raises(ValueError, match="epsilon"):
        neurons_for_accuracy(1e-300, 100, 1)
    with pytest.raises(ValueError, match="dim / smoothness"):
        accuracy_for_neurons(1e308, 1e-300, 1e300)
    with pytest.raises(ValueError, match="dim / smoothness"):
        neurons_for_accuracy(0.5, 1e308, 1e-300)
    with pytest.raises(ValueError, match="num_neurons"):
        accuracy_for_neurons(10**400, 1, 1)
    assert round(neurons_for_accuracy(0.1, 10, 2)) == 100000  # unchanged
    assert accuracy_for_neurons(1e5, 10, 2) == pytest.approx(0.1)


def test_piecewise_cubic_interpolant_is_exact_on_cubics_and_has_order_four():
    from transformer_math.theory.approximation import piecewise_cubic_interpolant_1d

    x = torch.linspace(-1, 1, 1001, dtype=torch.float64)
    cubic = lambda t: 2 * t**3 - t**2 + 0.5 * t - 3  # noqa: E731
    assert float((piecewise_cubic_interpolant_1d(cubic, 9)(x) - cubic(x)).abs().max()) < 1e-12
    errs = [float((piecewise_cubic_interpolant_1d(torch.sin, n)(x) - torch.sin(x)).abs().max())
            for n in (12, 24)]
    assert 12 < errs[0] / errs[1] < 20  # h^4: 16x smaller at half the spacing
    with pytest.raises(ValueError, match="multiple of 3"):
        piecewise_cubic_interpolant_1d(torch.sin, 10)
