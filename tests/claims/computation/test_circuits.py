"""computation.precision-claims (cited) and computation.circuit-class-audit."""

from __future__ import annotations

from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim


def test_cited_claim_carries_primary_sources_and_no_margin():
    ev = run_claim(get_claim("computation.precision-claims"), Context(size=Size.TINY)).evidence
    assert ev.verdict is Verdict.CITED and not ev.margins
    text = " ".join(ev.notes)
    for source in ("Perez", "Merrill & Sabharwal", "2411.07602"):
        assert source in text


def test_audit_refutes_the_seed_with_a_computed_circuit():
    res = run_claim(get_claim("computation.circuit-class-audit"), Context(size=Size.TINY))
    assert res.evidence.verdict is Verdict.REFUTED
    assert "TC^0[log n]" in " ".join(res.evidence.notes)
