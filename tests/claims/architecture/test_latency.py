"""architecture.vla-latency: refuted with its margins, and the planted bug fails it."""

from __future__ import annotations

from transformer_math.claims.architecture import latency  # noqa: F401  (registers the claim)
from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim


def test_claim_refutes_the_seed_and_catches_its_falsifier() -> None:
    res = run_claim(get_claim("architecture.vla-latency"), Context(seed=0, size=Size.TINY,
                                                                   seeds=1))
    assert res.error is None
    assert res.evidence.verdict is Verdict.REFUTED
    assert all(m.holds for m in res.evidence.margins)
    assert not all(m.holds for m in res.evidence.seed_margins)
    assert res.falsifier_caught is True
    assert res.falsifier_evidence is not None
    assert res.falsifier_evidence.verdict is Verdict.FAILED
    assert not res.falsifier_evidence.margins[0].holds  # the FLOP count, exact when clean
    cases = res.evidence.details["cases"]
    assert 3.0 < cases["h100-sxm"]["full_standard_ms"] < 4.5
    assert max(c["flash_share_of_gain"] for c in cases.values()) < 0.1
