"""experiments/memo.py: results reused across bugs whose sites they never query."""

from __future__ import annotations

from transformer_math import bugs
from transformer_math.experiments import memo
from transformer_math.robotics.policies.decision_transformer import DT_NONCAUSAL, dt_trunk
from transformer_math.robotics.policies.decision_transformer import DTConfig as _DTConfig

CALLS: list[tuple[int, frozenset[str]]] = []


def fake_training(config: int) -> tuple[int, bool]:
    CALLS.append((config, bugs.active()))
    return config, dt_trunk(_DTConfig(3, 2)).causal  # queries the site of robotics.dt-noncausal


def test_reused_under_an_unreached_bug_and_retrained_under_a_reached_one() -> None:
    memo.clear()
    CALLS.clear()
    try:
        first = memo.memoized(fake_training, 1)
        with bugs.plant("robotics.rtg-not-decremented"), bugs.recording() as rec:
            assert memo.memoized(fake_training, 1) is first  # site never passed
        assert DT_NONCAUSAL in rec and len(CALLS) == 1  # the replayed record names the site
        with bugs.plant(DT_NONCAUSAL):
            broken = memo.memoized(fake_training, 1)
            assert broken == (1, False) and memo.memoized(fake_training, 1) is broken
        assert len(CALLS) == 2 and memo.memoized(fake_training, 1) is first
        memo.memoized(fake_training, 2)
        assert [c for c, _ in CALLS] == [1, 1, 2]
    finally:
        memo.clear()
