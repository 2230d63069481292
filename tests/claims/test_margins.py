"""Every quick claim's verdict is firmer than the spread between seeds (issue 12, item 2).

For seeds 0-4 at size tiny, each pass condition (``Evidence.margins``) must hold at every seed and
its smallest slack must be at least three times the standard deviation of its value across the
seeds (``claims/margins.py``). ``tmath margins`` prints the same numbers.
"""

from __future__ import annotations

import pytest

from transformer_math.claims.margins import FACTOR, MarginSpread, spread_of
from transformer_math.claims.registry import Tier, all_claims

QUICK = [c for c in all_claims() if c.tier is Tier.QUICK]
SEEDS = (0, 1, 2, 3, 4)  # the same seeds as the quick_runs fixture's


@pytest.mark.parametrize("claim", QUICK, ids=lambda c: c.id)
def test_quick_claim_is_firm_over_seeds(claim, quick_runs):
    results = [quick_runs(seed)[claim.id].result for seed in SEEDS]
    spread = spread_of(claim, results, SEEDS)
    weak = [m.to_json() for m in spread.margins if not m.firm(FACTOR)]
    assert spread.firm(FACTOR), (spread.problems, weak)


def test_firmness_rule_in_both_directions():
    firm = MarginSpread("gap", ">=", 0.05, [0.20, 0.21, 0.19, 0.20, 0.22],
                        [0.15, 0.16, 0.14, 0.15, 0.17])
    assert firm.firm(3.0) and firm.spread > 0
    thin = MarginSpread("gap", ">=", 0.05, [0.06, 0.09, 0.051, 0.07, 0.12],
                        [0.01, 0.04, 0.001, 0.02, 0.07])
    assert not thin.firm(3.0)  # every seed passes, but by less than the seed-to-seed spread
    failing = MarginSpread("err", "<=", 1e-6, [0.0, 2e-6], [1e-6, -1e-6])
    assert not failing.firm(3.0)
    exact = MarginSpread("err", "<=", 1e-6, [0.0, 0.0], [1e-6, 1e-6])
    assert exact.firm(3.0) and exact.spread == 0
