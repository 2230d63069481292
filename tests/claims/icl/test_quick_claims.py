"""The quick icl claims: expected verdict, every margin holds, and the falsifier (a bug planted in
the library, reached by the clean run) makes a margin fail, not a crash (issue 14)."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import (
    Context,
    Falsifier,
    Size,
    Tier,
    all_claims,
    run_claim,
)

QUICK = [c for c in all_claims() if c.topic == "icl" and c.tier is Tier.QUICK]


def test_every_icl_claim_has_a_planted_falsifier_and_seed_lines() -> None:
    for c in all_claims():
        if c.topic == "icl":
            assert isinstance(c.falsifier, Falsifier), c.id
            assert c.expected is not None and c.seed_refs, c.id


@pytest.mark.parametrize("claim", QUICK, ids=lambda c: c.id)
def test_icl_quick_claim_both_directions(claim) -> None:
    res = run_claim(claim, Context(seed=0, size=Size.TINY))
    assert res.error is None and res.expected_met, res.evidence.notes
    assert res.evidence.margins and all(m.holds for m in res.evidence.margins)
    assert claim.falsifier.bug in res.reached
    assert res.falsifier_caught is True
    assert not all(m.holds for m in res.falsifier_evidence.margins)
