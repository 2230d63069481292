"""The full-tier icl claims at tiny size: verdict not failed, every margin holds, and the
falsifier is caught by a failing margin (test_every_claim only checks that they run)."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim

FULL = [
    "icl.trained-matches-gd",
    "icl.preconditioned-optimum",
    "icl.task-diversity-transition",
    "icl.induction-heads",
]


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", FULL)
def test_full_claim_tiny(claim_id: str) -> None:
    result = run_claim(get_claim(claim_id), Context(seed=0, size=Size.TINY))
    assert result.error is None, result.error
    assert result.evidence.verdict is not Verdict.FAILED, result.evidence
    assert result.evidence.margins and all(m.holds for m in result.evidence.margins)
    assert result.falsifier_caught is True, result.falsifier_evidence
    assert result.falsifier_evidence is not None
    assert any(not m.holds for m in result.falsifier_evidence.margins)
