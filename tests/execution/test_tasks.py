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


def test_an_undecided_first_seed_brings_the_other_seeds_falsifier_runs(monkeypatch) -> None:
    """When the first seed does not decide the falsifier, its task computes the other seeds'
    runs with the bug (``falsifier_more``) and the assembly decides on them without computing
    anything; the result equals the single-process run's."""
    from transformer_math.claims import registry, seeds
    from transformer_math.claims.registry import Context, Size, run_claim
    from transformer_math.execution import tasks

    claim = get_claim("robotics.cvae-zero-latent")
    settings = RunSettings(seed=0, seeds=2, size="tiny")
    decided = tasks.run_task(TaskKey(claim.id, 0), settings)
    assert set(decided["phases"]) == {"check", "falsifier"}  # decided on seed 0 alone
    monkeypatch.setattr(registry, "worst_seed_failure", lambda evidence: None)
    payloads = {k: tasks.run_task(k, settings) for k in plan([claim], settings)}
    lead = payloads[TaskKey(claim.id, 0)]
    assert set(lead["phases"]) == {"check", "falsifier", "falsifier_more"}
    assert set(lead["phases"]["falsifier_more"]) == {"1"}
    for key, payload in payloads.items():
        tasks.validate_payload(key, payload)
    direct = run_claim(claim, Context(seed=0, size=Size.TINY, seeds=2))

    def no_training(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the assembly computed a seed")

    monkeypatch.setattr(seeds, "_one_run", no_training)
    assembled = tasks.assemble(claim, settings, payloads)
    assert assembled.falsifier_caught and direct.falsifier_caught
    assert assembled.falsifier_evidence.per_seed["seeds"] == [0, 1]
    assert assembled.evidence.measured == direct.evidence.measured
    assert assembled.falsifier_evidence.margins == direct.falsifier_evidence.margins
