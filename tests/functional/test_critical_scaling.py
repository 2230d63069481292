"""functional.critical_scaling: the log-length scale and the seed's rules (004 ch. 11)."""

import math

import pytest

from transformer_math.bugs import plant
from transformer_math.functional.critical_scaling import (
    log_length_scale_fn,
    seed_loglog_scale_fn,
    seed_polylog_scale_fn,
    simplex_self_weight,
)


def test_log_of_wrong_length_bug_takes_the_head_dim():
    """Planted critical-scaling.log-of-wrong-length: gamma log(head_dim) in place of
    gamma log(k_len); the correct scale grows with the number of keys."""
    fn = log_length_scale_fn(2.0, divide_by_sqrt_head_dim=False)
    assert fn(129, 64) == pytest.approx(2.0 * math.log(64), rel=1e-15)
    assert fn(129, 128) > fn(129, 64)
    with plant("critical-scaling.log-of-wrong-length"):
        assert fn(129, 64) == pytest.approx(2.0 * math.log(129), rel=1e-15)
        assert fn(129, 128) == fn(129, 64)


def test_seed_rules_shrink_the_multiplier():
    for rule in (seed_loglog_scale_fn(1.0), seed_polylog_scale_fn(1.0)):
        assert rule(1, 16) > rule(1, 4096) > rule(1, 65536)
        assert rule(1, 16) <= 1.0
    assert seed_loglog_scale_fn(1.0)(1, 2) == 1.0  # loglog T taken as 0 for T <= e
    assert seed_loglog_scale_fn(1.0)(1, 4096) == pytest.approx(
        1 / math.sqrt(1 + math.log(math.log(4096))))
    with pytest.raises(ValueError, match="c must be"):
        seed_loglog_scale_fn(-1.0)


def test_simplex_self_weight_limits():
    # gamma above gamma_c = 2 (rho = 1/2): A_ii -> 1; below: -> 0
    assert simplex_self_weight(10**6, 3.0, 0.5) > simplex_self_weight(10**3, 3.0, 0.5)
    assert simplex_self_weight(10**6, 1.0, 0.5) < simplex_self_weight(10**3, 1.0, 0.5)
