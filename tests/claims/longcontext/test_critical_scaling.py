"""claims.longcontext.critical_scaling and the closed form it rests on (004 ch. 11)."""

import math

import pytest
import torch

from transformer_math.claims.longcontext.critical_scaling import (
    _half_crossing,
    _self_weights,
    check_critical_scaling,
)
from transformer_math.claims.registry import Context, Size, Verdict, all_hold
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


def test_verdict_refutes_the_seed_whose_divisor_has_no_transition():
    ctx = Context(seed=0, size=Size.TINY)
    ev = check_critical_scaling(ctx)
    assert ev.verdict is Verdict.REFUTED and all_hold(ev.margins)
    seed = check_critical_scaling(ctx, scale_rule="seed-polylog")
    assert math.isnan(seed.measured["crossing"])  # A_ii never reaches 1/2: collapse for every c
    assert not all_hold(seed.margins)


def test_half_crossing_interpolates_and_is_nan_without_a_crossing():
    assert _half_crossing([1.0, 2.0, 3.0], [0.2, 0.4, 0.8]) == pytest.approx(2.25)
    assert math.isnan(_half_crossing([1.0, 2.0, 3.0], [0.4, 0.3, 0.1]))
