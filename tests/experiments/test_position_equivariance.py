"""Training with and without a position code (slow) and the config's validation."""

from __future__ import annotations

import pytest

from transformer_math.experiments import position_equivariance


@pytest.mark.slow
def test_position_equivariance_tiny_no_position_arm_respects_the_ceiling():
    res = position_equivariance.run(position_equivariance.PositionEquivarianceConfig.tiny(seed=0))
    assert set(res.results) == {"none", "learned"}
    assert res.exact_eval
    # a model without positions cannot beat the equivariant ceiling (exact evaluation)
    assert res.results["none"].eval_accuracy <= res.equivariant_ceiling + 1e-9
    assert res.results["learned"].eval_accuracy >= 0.9 > res.equivariant_ceiling


def test_config_validation():
    with pytest.raises(ValueError, match="task must be"):
        position_equivariance.PositionEquivarianceConfig(task="context_lookup")
