"""The quick robotics claims (claims/robotics/mechanics.py): expected verdicts, bugs caught."""

from __future__ import annotations

import pytest

from transformer_math import bugs
from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim

QUICK = ("robotics.temporal-ensembling", "robotics.receding-horizon", "robotics.return-to-go",
         "robotics.dt-causal-conditioning", "robotics.act-cvae")


@pytest.mark.parametrize("claim_id", QUICK)
def test_quick_claim_meets_its_expected_verdict_and_catches_its_bug(claim_id: str) -> None:
    c = get_claim(claim_id)
    r = run_claim(c, Context(seed=0, size=Size.TINY))
    assert r.error is None and r.expected_met and not r.problem, r.evidence.notes
    assert r.falsifier_caught and c.falsifier.bug in r.reached


def test_temporal_ensembling_refutes_the_seeds_age_weighting_from_the_measurement() -> None:
    r = run_claim(get_claim("robotics.temporal-ensembling"), Context(seed=1, size=Size.TINY),
                  falsifier=False)
    assert r.evidence.verdict is Verdict.REFUTED
    assert all(m.holds for m in r.evidence.margins)
    assert not any(m.holds for m in r.evidence.seed_margins)


@pytest.mark.parametrize("bug", ["robotics.chunk-requery-every-step",
                                 "robotics.chunk-index-frozen"])
def test_receding_horizon_kills_both_queue_bugs(bug: str) -> None:
    c = get_claim("robotics.receding-horizon")
    with bugs.plant(bug):
        r = run_claim(c, Context(seed=0, size=Size.TINY), falsifier=False)
    assert r.evidence.verdict is Verdict.FAILED and r.error is None
