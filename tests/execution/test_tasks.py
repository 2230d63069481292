"""execution/tasks.py: the plan of a run, the order tasks go to workers, the first seed's
falsifier."""

from __future__ import annotations

from transformer_math.claims.registry import get_claim
from transformer_math.execution.tasks import RunSettings, TaskKey, plan, schedule


def test_schedule_puts_first_seeds_of_training_claims_first() -> None:
    claims = [get_claim("attention.sqrt-dk-variance"), get_claim("icl.induction-heads"),
              get_claim("computation.parity")]
    keys = plan(claims, RunSettings(seed=5, seeds=3))
    assert keys[0] == TaskKey("attention.sqrt-dk-variance", None) and len(keys) == 7
    order = schedule(keys, claims)
    assert order[:2] == [TaskKey("icl.induction-heads", 5), TaskKey("computation.parity", 5)]
    assert order[2:6] == [TaskKey("icl.induction-heads", 6), TaskKey("icl.induction-heads", 7),
                          TaskKey("computation.parity", 6), TaskKey("computation.parity", 7)]
    assert order[-1] == TaskKey("attention.sqrt-dk-variance", None)
    assert sorted(order) == sorted(keys)


def test_only_the_first_seed_task_runs_the_falsifier() -> None:
    from transformer_math.execution.tasks import run_task

    settings = RunSettings(seed=0, seeds=2, size="tiny")
    lead = run_task(TaskKey("robotics.cvae-zero-latent", 0), settings)
    other = run_task(TaskKey("robotics.cvae-zero-latent", 1), settings)
    assert set(lead["phases"]) == {"check", "falsifier"}
    assert set(other["phases"]) == {"check"}
