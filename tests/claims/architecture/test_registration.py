"""Every architecture.* claim is registered under its package, and its margins decide the
verdict in both directions (the claim holds; its falsifier fails at least one margin)."""

from __future__ import annotations

import pytest

from transformer_math.claims.architecture import (  # noqa: F401  (registers the claims)
    encoder_decoder,
    flash,
    kaplan,
    latency,
    layernorm_scale,
    norms,
    residual,
    scaling,
)
from transformer_math.claims.registry import CLAIMS, Context, Falsifier, Size, run_claim

ARCHITECTURE = sorted((c for c in CLAIMS.values() if c.topic == "architecture"),
                      key=lambda c: c.id)
EXPECTED = {
    "architecture.residual-euler",
    "architecture.residual-gradient",
    "architecture.layernorm-geometry",
    "architecture.pre-vs-post-norm",
    "architecture.chinchilla",
    "architecture.inference-aware-sizing",
    "architecture.flash-io",
    "architecture.flash-recompute-flops",
    "architecture.tiled-attention-exact",
    "architecture.encoder-decoder",
    "architecture.layernorm-eps-jacobian",
    "architecture.kaplan-joint-law",
    "architecture.vla-latency",
}


def test_all_architecture_claims_registered() -> None:
    assert {c.id for c in ARCHITECTURE} == EXPECTED
    for c in ARCHITECTURE:  # issue 14: every falsifier is a planted bug; expected + seed lines
        assert isinstance(c.falsifier, Falsifier) and c.expected is not None and c.seed_refs


@pytest.mark.parametrize("c", ARCHITECTURE, ids=lambda c: c.id)
def test_margins_decide_the_verdict_in_both_directions(c) -> None:  # type: ignore[no-untyped-def]
    """Issue 12: every pass condition is a margin; they all hold for the claim and at least one
    fails for its falsifier (so the falsifier is caught through a margin)."""
    result = run_claim(c, Context(seed=0, size=Size.TINY, seeds=1))
    assert result.error is None and result.expected_met, result.evidence.notes[-1:]
    assert result.falsifier_caught is True
    assert result.claim.falsifier is not None and result.claim.falsifier.bug in result.reached
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
        "architecture.inference-aware-sizing",
        "architecture.flash-recompute-flops",
        "architecture.tiled-attention-exact",
        "architecture.encoder-decoder",
    }
