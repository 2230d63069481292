"""Every icl.* claim at tiny size: not failed, and its falsifier is caught."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim

QUICK = ["icl.one-step-gd", "icl.neumann-ols", "icl.bayes-posterior", "icl.newton-schulz"]
FULL = [
    "icl.trained-matches-gd",
    "icl.preconditioned-optimum",
    "icl.task-diversity-transition",
    "icl.induction-heads",
]


def _check(claim_id: str) -> None:
    result = run_claim(get_claim(claim_id), Context(seed=0, size=Size.TINY))
    assert result.error is None, result.error
    assert result.evidence.verdict is not Verdict.FAILED, result.evidence
    assert result.falsifier_caught is True, result.falsifier_evidence
    # the verdict rests on margins: all hold for the claim, at least one fails for the falsifier
    assert result.evidence.margins and all(m.holds for m in result.evidence.margins)
    assert result.falsifier_evidence is not None
    assert any(not m.holds for m in result.falsifier_evidence.margins)


@pytest.mark.parametrize("claim_id", QUICK)
def test_quick_claim(claim_id: str) -> None:
    _check(claim_id)


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", FULL)
def test_full_claim_tiny(claim_id: str) -> None:
    _check(claim_id)


def test_claims_are_registered_with_falsifiers() -> None:
    for claim_id in QUICK + FULL:
        c = get_claim(claim_id)
        assert c.falsifier is not None and c.source and c.statement
