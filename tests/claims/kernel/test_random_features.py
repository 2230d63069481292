"""claims.kernel.random_features: the slope fit and the falsifier's bias."""

import math

import pytest

from transformer_math.bugs import plant
from transformer_math.claims.kernel.random_features import _log_log_slope, check_random_features
from transformer_math.claims.registry import Context, Size, Verdict


def test_log_log_slope_of_a_power_law():
    ms = [16, 64, 256, 1024]
    assert _log_log_slope(ms, [3.0 * m**-0.5 for m in ms]) == pytest.approx(-0.5, abs=1e-12)


def test_without_norm_correction_the_bias_is_the_predicted_factor():
    """Planted linear-attention.favor-no-norm-correction: phi(x) = exp(w^T x)/sqrt(m) estimates
    exp(q.k) exp((|q|^2 + |k|^2)/2): with unit q, k and kernel exp(beta q.k) the relative bias
    is exp(beta) - 1 (the notes' 0.133 at 1/8)."""
    with plant("linear-attention.favor-no-norm-correction"):
        ev = check_random_features(Context(seed=0, size=Size.TINY))
    assert ev.verdict is Verdict.FAILED
    for beta, bias in ev.measured["bias"].items():
        assert bias == pytest.approx(math.expm1(float(beta)), rel=0.1)
