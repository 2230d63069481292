"""Every registered claim, at its tiny size: not failed, and its falsifier caught.

This is the registry-wide guarantee of the project's standard "a check that cannot fail is a
defect": new claims are picked up automatically by living in ``claims/<topic>/``.
"""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Context, Size, Tier, Verdict, all_claims, run_claim

CLAIMS = all_claims()


@pytest.mark.parametrize("claim", [c for c in CLAIMS if c.tier is Tier.QUICK], ids=lambda c: c.id)
def test_quick_claim_holds_and_falsifier_is_caught(claim, quick_runs):
    res = quick_runs(0)[claim.id].result  # the run of seed 0, shared with the other claim tests
    assert res.evidence.verdict is not Verdict.FAILED, (res.evidence.measured, res.error)
    if claim.falsifier is not None:
        assert res.falsifier_caught, (claim.falsifier.name, res.falsifier_evidence)
    if res.evidence.verdict is not Verdict.CITED:
        assert res.evidence.measured is not None


@pytest.mark.slow
@pytest.mark.parametrize("claim", [c for c in CLAIMS if c.tier is Tier.FULL], ids=lambda c: c.id)
def test_full_claim_tiny_config_runs(claim):
    res = run_claim(claim, Context(seed=0, size=Size.TINY))
    assert res.error is None, res.error
    assert res.evidence.measured is not None
    if claim.falsifier is not None:
        assert res.falsifier_evidence is not None
