"""theory.compounding_error: the seed's worked example T = 400, eps = 0.01 and the exact worst
case (Ross & Bagnell 2010)."""

from __future__ import annotations

import pytest

from transformer_math.theory.compounding_error import (
    bc_regret_bound,
    dagger_regret_bound,
    seed_chunked_bound,
    substituted_bound,
    worst_case_expected_cost,
)


def test_worked_example_numbers():
    assert bc_regret_bound(400, 0.01) == pytest.approx(1600.0)
    assert seed_chunked_bound(400, 0.01, 90) == pytest.approx(17.78, abs=0.01)
    assert substituted_bound(400, 0.01, 90) == pytest.approx(0.1975, abs=1e-4)
    assert dagger_regret_bound(400, 0.01) == pytest.approx(4.0)
    # exact worst case: sum_t (1 - (1 - eps)^t) for k = 1
    exact = sum(1 - 0.99**t for t in range(1, 401))
    assert worst_case_expected_cost(400, 0.01) == pytest.approx(exact)
    assert worst_case_expected_cost(400, 0.01, 90) <= seed_chunked_bound(400, 0.01, 90)
    assert worst_case_expected_cost(400, 0.01, 90, per_step_error=True) > 300
    with pytest.raises(ValueError, match="eps"):
        bc_regret_bound(10, 1.5)
    with pytest.raises(ValueError, match="chunk"):
        seed_chunked_bound(10, 0.1, 0)
