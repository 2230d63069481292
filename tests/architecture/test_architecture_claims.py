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


def test_pre_vs_post_norm_slopes_have_room_at_tiny() -> None:
    """The redesigned tiny configuration (d = 64, L = 2..16, 3 seeds) leaves each slope at least
    0.15 inside its +-0.25 band at seed 0 (the old one left 0.006 for the Pre-LN slope)."""
    from transformer_math.claims.registry import get_claim

    ev = run_claim(get_claim("architecture.pre-vs-post-norm"), Context(seed=0, size=Size.TINY))
    slopes = [m for m in ev.evidence.margins if "slope" in m.name]
    assert len(slopes) == 2
    assert all(m.slack >= 0.15 for m in slopes), [m.to_json() for m in slopes]
