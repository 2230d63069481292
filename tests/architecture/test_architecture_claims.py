"""Every architecture.* claim: not failed at tiny size, and its falsifier is caught."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Context, Size, Verdict, all_claims, run_claim

ARCHITECTURE = [c for c in all_claims() if c.topic == "architecture"]
EXPECTED = {
    "architecture.residual-euler",
    "architecture.residual-gradient",
    "architecture.layernorm-geometry",
    "architecture.pre-vs-post-norm",
    "architecture.chinchilla",
    "architecture.flash-io",
    "architecture.tiled-attention-exact",
    "architecture.encoder-decoder",
}


def test_all_architecture_claims_registered() -> None:
    assert {c.id for c in ARCHITECTURE} == EXPECTED


@pytest.mark.parametrize("c", ARCHITECTURE, ids=lambda c: c.id)
def test_claim_holds_and_falsifier_caught(c) -> None:  # type: ignore[no-untyped-def]
    result = run_claim(c, Context(seed=0, size=Size.TINY))
    assert result.error is None, result.evidence.notes
    assert result.evidence.verdict is not Verdict.FAILED, result.evidence.measured
    assert result.falsifier_caught is True, result.falsifier_evidence
    assert result.evidence.figures or c.id in {
        "architecture.chinchilla",
        "architecture.tiled-attention-exact",
        "architecture.encoder-decoder",
    }
