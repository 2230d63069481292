"""claims.longcontext.critical_scaling and the closed form it rests on (004 ch. 11)."""

import math

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.claims.longcontext.critical_scaling import (
    _half_crossing,
    _self_weights,
    check_critical_scaling,
)
from transformer_math.claims.registry import CLAIMS, Context, Size, Verdict, all_hold, run_claim
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.critical_scaling import (
    critical_gamma,
    log_length_scale_fn,
    simplex_self_weight,
    simplex_tokens,
)
from transformer_math.nn.attention import MultiHeadAttention

F64 = torch.float64


def test_critical_scaling_closed_form_and_scale_fn():
    n, rho, gamma = 64, 0.5, 2.5
    y = simplex_tokens(n, rho)
    gram = y @ y.T
    assert torch.allclose(torch.diagonal(gram), torch.ones(n, dtype=F64))
    beta = log_length_scale_fn(gamma, divide_by_sqrt_head_dim=False)(n + 1, n)
    yy = y[None, None]
    w = scaled_dot_product_attention(yy, yy, yy, scale=beta, return_weights=True).weights
    assert float(w[0, 0, 0, 0]) == pytest.approx(simplex_self_weight(n, gamma, rho), rel=1e-12)
    assert critical_gamma(rho) == 2.0
    mha = MultiHeadAttention(8, 2, scale_fn=log_length_scale_fn(1.0))
    assert mha(torch.randn(1, 5, 8)).shape == (1, 5, 8)
    with pytest.raises(ValueError, match="gamma"):
        log_length_scale_fn(-1.0)


@pytest.mark.parametrize("gamma", [1.0, 2.0, 3.0])
def test_measured_self_weight_is_the_closed_form(gamma):
    n, rho = 32, 0.5
    assert _self_weights(n, rho, gamma * math.log(n)) == pytest.approx(
        simplex_self_weight(n, gamma, rho), rel=1e-10)


def test_verdict_is_measured_refutation_of_the_seed_divisor():
    ctx = Context(seed=0, size=Size.TINY)
    ev = check_critical_scaling(ctx)
    assert ev.verdict is Verdict.REFUTED and all_hold(ev.margins)
    assert ev.seed_margins and not all_hold(ev.seed_margins)
    # the seed's multiplier 1/sqrt(f(n)) <= 1: A_ii stays far below 1/2 and falls with n
    assert ev.measured["seed_max_A_ii_at_n_max"] < 0.05
    assert ev.measured["seed_best_rise"] < 0


def test_falsifier_log_of_the_wrong_length_is_caught():
    result = run_claim(CLAIMS["longcontext.critical-scaling"], Context(seed=0, size=Size.TINY))
    assert result.evidence.verdict is Verdict.REFUTED
    assert result.falsifier_caught is True
    assert "critical-scaling.log-of-wrong-length" in result.reached
    with plant("critical-scaling.log-of-wrong-length"):
        ev = check_critical_scaling(Context(seed=0, size=Size.TINY))
    assert not ev.measured["identity_above"]  # a fixed multiplier always collapses


def test_half_crossing_interpolates_and_is_nan_without_a_crossing():
    assert _half_crossing([1.0, 2.0, 3.0], [0.2, 0.4, 0.8]) == pytest.approx(2.25)
    assert math.isnan(_half_crossing([1.0, 2.0, 3.0], [0.4, 0.3, 0.1]))
