"""The expressivity.* and computation.* claims at tiny size: both directions."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import (
    Context,
    Size,
    Tier,
    Verdict,
    all_claims,
    get_claim,
    run_claim,
)

MINE = [c for c in all_claims() if c.topic in ("expressivity", "computation")]


def test_every_listed_claim_exists():
    ids = {c.id for c in MINE}
    for expected in (
        "expressivity.no-position-equivariant", "expressivity.component-ablation",
        "expressivity.contextual-mapping", "expressivity.approximation-rate",
        "computation.hahn-sensitivity", "computation.parity", "computation.parity-margin",
        "computation.precision-claims",
    ):
        assert expected in ids


@pytest.mark.parametrize("claim", [c for c in MINE if c.tier is Tier.QUICK], ids=lambda c: c.id)
def test_quick_claim_holds_and_its_falsifier_is_caught(claim):
    res = run_claim(claim, Context(seed=0, size=Size.TINY))
    assert res.evidence.verdict is not Verdict.FAILED, (res.evidence.measured, res.error)
    if claim.falsifier is not None:
        assert res.falsifier_caught is True, res.falsifier_evidence
    else:
        assert res.evidence.verdict is Verdict.CITED


def test_cited_claim_carries_primary_sources():
    ev = run_claim(get_claim("computation.precision-claims"), Context(size=Size.TINY)).evidence
    text = " ".join(ev.notes)
    for source in ("Perez", "Merrill & Sabharwal", "2411.07602"):
        assert source in text


def test_audit_refutes_the_seed_with_a_computed_circuit():
    res = run_claim(get_claim("computation.circuit-class-audit"), Context(size=Size.TINY))
    assert res.evidence.verdict is Verdict.REFUTED
    assert "TC^0[log n]" in " ".join(res.evidence.notes)


@pytest.mark.slow
@pytest.mark.parametrize("claim", [c for c in MINE if c.tier is Tier.FULL], ids=lambda c: c.id)
def test_full_claim_tiny_config_runs_with_its_falsifier(claim):
    res = run_claim(claim, Context(seed=0, size=Size.TINY))
    assert res.error is None, res.error
    assert res.evidence.measured is not None
    assert res.falsifier_evidence is not None and res.evidence.figures
