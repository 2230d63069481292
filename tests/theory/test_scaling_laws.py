"""Scaling-law calculator: Chinchilla Table 3, exponents, inference-aware optimum."""

from __future__ import annotations

import math

import pytest

from transformer_math.theory.scaling_laws import (
    CHINCHILLA_TABLE_3,
    compute_optimal,
    get_scaling_fit,
    inference_aware_optimum,
)


@pytest.mark.parametrize(("params", "flops", "tokens"), CHINCHILLA_TABLE_3)
def test_table_3_within_10_percent(params: float, flops: float, tokens: float) -> None:
    by_flops = compute_optimal(flops=flops, approach="1")
    assert by_flops.params == pytest.approx(params, rel=0.10)
    assert by_flops.tokens == pytest.approx(tokens, rel=0.10)
    assert compute_optimal(params=params, approach="1").flops == pytest.approx(flops, rel=0.10)


def test_exponents_and_consistency() -> None:
    assert get_scaling_fit("3").a == pytest.approx(0.46, abs=0.005)
    assert get_scaling_fit("epoch").b == pytest.approx(0.49, abs=0.01)
    for approach in ("1", "2", "3", "epoch"):
        opt = compute_optimal(flops=1e22, approach=approach)
        assert 6 * opt.params * opt.tokens == pytest.approx(1e22)
        # going back from N or D lands on the same budget
        assert compute_optimal(params=opt.params, approach=approach).flops == pytest.approx(1e22)
        assert compute_optimal(tokens=opt.tokens, approach=approach).flops == pytest.approx(1e22)
    assert compute_optimal(tokens=1e9).params == pytest.approx(5e7)


def test_parametric_optimum_is_the_constrained_minimum() -> None:
    fit = get_scaling_fit("3")
    opt = compute_optimal(flops=1e21, approach="3")
    for factor in (0.8, 1.25):
        n = opt.params * factor
        assert fit.loss(n, 1e21 / (6 * n)) > opt.loss  # type: ignore[misc]


def test_inference_aware_optimum() -> None:
    base = compute_optimal(flops=1e21, approach="3")
    same = inference_aware_optimum(base, 0.0)
    assert same.params == pytest.approx(base.params, rel=1e-3)
    prev = base.params
    for d_inf in (1e11, 1e12, 1e13):
        opt = inference_aware_optimum(base, d_inf)
        assert opt.loss == pytest.approx(base.loss, rel=1e-9)
        assert opt.params < prev and opt.total_flops < opt.compute_optimal_total_flops
        prev = opt.params
    with pytest.raises(ValueError, match="loss surface"):
        inference_aware_optimum(compute_optimal(flops=1e21, approach="1"), 1e12)


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf])
def test_calculator_rejects_nonsense(bad: float) -> None:
    with pytest.raises(ValueError, match="flops"):
        compute_optimal(flops=bad)
    with pytest.raises(ValueError, match="exactly one"):
        compute_optimal(flops=1e20, params=1e9)
    with pytest.raises(ValueError, match="approach"):
        compute_optimal(flops=1e20, approach="4")


def test_training_cost_2nd_bug_and_the_correct_6nd() -> None:
    """Planted bug scaling.training-cost-2nd (both directions): Table 3's rows satisfy
    C = 6 N D within their rounding (worst 4.7 %); 2 N D is a factor 3 off."""
    from transformer_math.bugs import plant
    from transformer_math.theory.scaling_laws import training_flops

    for n, c, d in CHINCHILLA_TABLE_3:
        assert training_flops(n, d) == pytest.approx(c, rel=0.05)
        with plant("scaling.training-cost-2nd"):
            assert training_flops(n, d) == pytest.approx(c / 3, rel=0.05)


def test_numerical_optimum_equals_the_lagrange_closed_form() -> None:
    from transformer_math.theory.scaling_laws import (
        CHINCHILLA_LOSS,
        approach_3,
        numerical_compute_optimum,
    )

    fit = approach_3()
    for c in (1e19, 1e22, 1e25):
        opt = numerical_compute_optimum(CHINCHILLA_LOSS, c)
        assert opt.params == pytest.approx(fit.params_for_flops(c), rel=1e-5)
        assert opt.flops == pytest.approx(c, rel=1e-12)
        for k in (0.9, 1.1):  # a local minimum along the budget line
            assert CHINCHILLA_LOSS(opt.params * k, c / (6 * opt.params * k)) > opt.loss


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"tokens": 1e-300}, "tokens"),  # was ZeroDivisionError
        ({"params": 1e308, "approach": "3"}, "params"),  # was OverflowError
        ({"params": 1e308}, "params"),  # was tokens = inf, returned silently
        ({"flops": 1e308}, "flops"),  # was inf / nan, returned silently
        ({"tokens": 1e308}, "tokens"),  # was OverflowError
        ({"params": 10**400}, "params"),  # an int beyond the float range
    ],
)
def test_compute_optimal_refuses_results_outside_the_float_range(kwargs, named) -> None:
    with pytest.raises(ValueError, match=named):
        compute_optimal(**kwargs)


def test_inference_aware_refuses_overflow_and_keeps_good_numbers() -> None:
    base = compute_optimal(flops=1e21, approach="3")
    with pytest.raises(ValueError, match="inference_tokens"):
        inference_aware_optimum(base, 1e308)  # was inf / nan, returned silently
    with pytest.raises(ValueError, match="inference_tokens"):
        inference_aware_optimum(base, math.inf)
    good = inference_aware_optimum(base, 1e13)
    assert all(math.isfinite(v) for v in (good.params, good.tokens, good.total_flops))
    assert good.params < base.params
