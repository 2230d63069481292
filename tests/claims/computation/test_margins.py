"""computation.* quick claims: the margins decide both directions (issue 12)."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Context, Size, Tier, all_claims, run_claim

DECIDED = [c for c in all_claims()
           if c.topic == "computation" and c.tier is Tier.QUICK and c.falsifier is not None]


@pytest.mark.parametrize("claim", DECIDED, ids=lambda c: c.id)
def test_computation_margins_decide_both_directions(claim):
    res = run_claim(claim, Context(seed=0, size=Size.TINY))
    assert res.evidence.margins and all(m.holds for m in res.evidence.margins)
    f_margins = res.falsifier_evidence.margins
    assert f_margins and not all(m.holds for m in f_margins)
    assert [m.name for m in f_margins] == [m.name for m in res.evidence.margins]
