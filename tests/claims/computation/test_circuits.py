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
    claim = get_claim("computation.circuit-class-audit")
    res = run_claim(claim, Context(size=Size.TINY))
    assert res.evidence.verdict is Verdict.REFUTED and res.expected_met
    assert all(m.holds for m in res.evidence.margins)
    assert res.evidence.seed_margins and not any(m.holds for m in res.evidence.seed_margins)
    assert [r.line for r in claim.refutes] == [837]
    assert "TC^0[log n]" in " ".join(res.evidence.notes)
    assert res.falsifier_caught is True  # OR instead of PARITY: the circuit errs


def test_audit_and_margin_claims_kill_the_exclusive_running_parity():
    from transformer_math.bugs import plant

    # computation.hahn-sensitivity no longer checks PARITY's sensitivity (definitional; issue 31)
    for cid in ("computation.circuit-class-audit", "computation.parity-margin"):
        with plant("data.parity-running-exclusive"):
            res = run_claim(get_claim(cid), Context(size=Size.TINY), falsifier=False)
        assert res.error is None and res.evidence.verdict is Verdict.FAILED, cid
