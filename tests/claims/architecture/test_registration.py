"""Every architecture.* claim is registered under its package, and its margins decide the
verdict in both directions (the claim holds; its falsifier fails at least one margin)."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Context, Size, all_claims, run_claim

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
def test_margins_decide_the_verdict_in_both_directions(c) -> None:  # type: ignore[no-untyped-def]
    """Issue 12: every pass condition is a margin; they all hold for the claim and at least one
    fails for its falsifier (so the falsifier is caught through a margin)."""
    result = run_claim(c, Context(seed=0, size=Size.TINY))
    margins = result.evidence.margins
    assert margins, "no margin reported"
    assert all(m.holds for m in margins), [m.to_json() for m in margins if not m.holds]
    assert result.falsifier_evidence is not None
    assert result.falsifier_evidence.margins
    assert not all(m.holds for m in result.falsifier_evidence.margins)
    names = [m.name for m in margins]
    assert names == [m.name for m in result.falsifier_evidence.margins]
    assert len(set(names)) == len(names)
    assert result.evidence.figures or c.id in {
        "architecture.chinchilla",
        "architecture.tiled-attention-exact",
        "architecture.encoder-decoder",
    }
