"""Every expressivity.* claim: planted-bug falsifier, expected verdict, seed lines; the quick
ones obtain their expected verdict and catch their falsifier at tiny size."""

from __future__ import annotations

import pytest

from transformer_math.claims.expressivity import (  # noqa: F401  (registers the claims)
    approximation,
    component_ablation,
    contextual_mapping,
    depth_separation,
    equivariance,
    ffn_lookup,
)
from transformer_math.claims.registry import CLAIMS, Context, Falsifier, Size, Tier, run_claim

EXPRESSIVITY = sorted((c for c in CLAIMS.values() if c.topic == "expressivity"),
                      key=lambda c: c.id)


def test_registered_with_planted_bugs() -> None:
    assert {c.id for c in EXPRESSIVITY} == {
        "expressivity.approximation-rate", "expressivity.component-ablation",
        "expressivity.contextual-mapping", "expressivity.depth-separation",
        "expressivity.ffn-lookup",
        "expressivity.no-position-equivariant", "expressivity.no-position-fit"}
    for c in EXPRESSIVITY:
        assert isinstance(c.falsifier, Falsifier) and c.expected is not None and c.seed_refs


@pytest.mark.parametrize("c", [c for c in EXPRESSIVITY if c.tier is Tier.QUICK],
                         ids=lambda c: c.id)
def test_quick_claims_both_directions(c) -> None:  # type: ignore[no-untyped-def]
    result = run_claim(c, Context(seed=0, size=Size.TINY))
    assert result.error is None and result.expected_met, result.evidence.notes[-1:]
    assert result.falsifier_caught is True
    assert c.falsifier.bug in result.reached
    assert result.evidence.margins


@pytest.mark.slow
@pytest.mark.parametrize("c", [c for c in EXPRESSIVITY if c.tier is Tier.FULL],
                         ids=lambda c: c.id)
def test_full_claims_one_seed(c, full_runs) -> None:  # type: ignore[no-untyped-def]
    """The training claims at tiny size, one seed (minutes: slow; the shared run)."""
    result = full_runs(c.id)
    assert result.error is None and result.expected_met, result.evidence.notes[-1:]
    assert result.falsifier_caught is True
    assert result.evidence.per_seed is not None
