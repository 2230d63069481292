"""The full-tier icl claims at tiny size (one seed: CI time): verdict as expected, every margin
holds, per-seed values reported, and the falsifier (a planted bug the run reaches) is caught by a
failing margin (test_every_claim only checks that they run)."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import get_claim

FULL = [
    "icl.trained-matches-gd",
    "icl.preconditioned-optimum",
    "icl.task-diversity-transition",
    "icl.induction-heads",
]


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", FULL)
def test_full_claim_tiny(claim_id: str, full_runs) -> None:
    claim = get_claim(claim_id)
    result = full_runs(claim_id)
    assert result.error is None, result.error
    assert result.expected_met, result.evidence.notes
    assert result.evidence.margins and all(m.holds for m in result.evidence.margins)
    assert result.evidence.per_seed is not None and result.evidence.per_seed["seeds"] == [0]
    assert claim.falsifier is not None and claim.falsifier.bug in result.reached
    assert result.falsifier_caught is True, result.falsifier_evidence
    assert result.falsifier_evidence is not None
    assert any(not m.holds for m in result.falsifier_evidence.margins)
