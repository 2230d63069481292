"""The quick robotics claims of claims/robotics/mechanics.py: expected verdicts, bugs caught.

The implementation checks that were quick claims here (receding horizon, return-to-go, ACT's
CVAE loss, the ensembler's closed form) are tests since issue 31:
``tests/robotics/test_mechanics_checks.py``.
"""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Context, Kind, Size, Verdict, get_claim, run_claim


@pytest.mark.parametrize("claim_id", ["robotics.dt-causal-conditioning",
                                      "robotics.ar-decoding-steps"])
def test_quick_claim_meets_its_expected_verdict_and_catches_its_bug(claim_id: str) -> None:
    c = get_claim(claim_id)
    r = run_claim(c, Context(seed=0, size=Size.TINY))
    assert r.error is None and r.expected_met and not r.problem, r.evidence.notes
    assert r.falsifier_caught and c.falsifier.bug in r.reached


def test_temporal_ensembling_is_a_cited_correction_of_the_seeds_weights() -> None:
    c = get_claim("robotics.temporal-ensembling")
    assert c.kind is Kind.CITED and c.falsifier is None and not c.refutes
    assert [k.line for k in c.corrections] == [1269]
    r = run_claim(c, Context(seed=0, size=Size.TINY))
    assert r.evidence.verdict is Verdict.CITED and r.expected_met and not r.problem


def test_ar_decoding_steps_counts_one_forward_per_action_token() -> None:
    r = run_claim(get_claim("robotics.ar-decoding-steps"), Context(seed=1, size=Size.TINY),
                  falsifier=False)
    rows = r.evidence.measured
    assert rows and all(v["forwards"] == v["d_a H"] for v in rows.values())
    assert {v["d_a H"] for v in rows.values()} == {1, 4, 6, 24}
