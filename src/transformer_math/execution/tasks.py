"""A run of claims as independent tasks, one per (claim, seed), and their assembly into results.

A claim whose check sweeps seeds (``Claim.seeded``: it calls ``claims.seeds.over_seeds``) is
cut into one task per seed: the task runs the check with ``SeedHook(only=s)``, which computes
seed ``s`` alone and stops the check (``SeedCollected``); the first seed's task then runs the
same with the falsifier's bug planted. Both phases of that seed run in one task, in one process,
so the experiment memo (``experiments/memo.py``) lets a falsifier whose bug lies after training
reuse the clean run's training exactly as the single-process run does. The falsifier usually
needs no other seed: ``registry.run_claim`` decides it on the first seed alone when a
worst-of-seeds margin fails there (it then fails on every seed set); when it does not, the first
seed's task computes the other seeds' runs with the bug as well (``falsifier_more``). Any other
claim is one task (``seed`` None) that runs the whole claim.

:func:`assemble` then runs the check (and the falsifier) once more with every seed handed over
(``SeedHook(cached=...)``): the sweep trains nothing and the verdict is decided on the seeds'
numbers as the single-process run decides it, so for the same seeds the results are equal
wherever the tasks ran (tests/execution). A task's payload is plain JSON
(:mod:`transformer_math.execution.codec`): it crosses processes, and the results log keeps it.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transformer_math import bugs
from transformer_math.execution import codec

PAYLOAD_KINDS = ("seed", "claim")


@dataclass(frozen=True, order=True)
class TaskKey:
    """One task: a claim and one of its seeds, or (``seed`` None) the whole claim."""

    claim: str
    seed: int | None

    def label(self) -> str:
        return self.claim if self.seed is None else f"{self.claim} seed {self.seed}"


@dataclass(frozen=True)
class RunSettings:
    """What every task of a run shares, and what decides its numbers: the first seed, how many
    seeds a training claim runs, the experiment size and torch's intra-op threads (a float
    reduction's order depends on them)."""

    seed: int = 0
    seeds: int = 3
    size: str = "default"
    threads: int = 1

    def context(self) -> Any:
        from transformer_math.claims.registry import Context, Size

        return Context(seed=self.seed, size=Size(self.size), seeds=self.seeds)

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "seeds": self.seeds, "size": self.size,
                "threads": self.threads}


def plan(claims: Sequence[Any], settings: RunSettings) -> list[TaskKey]:
    """The tasks of a run, in the claims' order: one per seed of a seeded claim, else one."""
    keys: list[TaskKey] = []
    for c in claims:
        if c.seeded:
            keys += [TaskKey(c.id, s) for s in settings.context().seed_values()]
        else:
            keys.append(TaskKey(c.id, None))
    return keys


def schedule(keys: Sequence[TaskKey], claims: Sequence[Any]) -> list[TaskKey]:
    """The order tasks are handed to workers: the training claims' seeds first (full tier, the
    long ones), each claim's first seed (which also runs the falsifier) before its other seeds,
    the short tasks after them to fill the workers' last gaps (longest first, roughly)."""
    tier = {c.id: c.tier.value for c in claims}
    first: dict[str, int] = {}
    for k in keys:
        if k.seed is not None:
            first[k.claim] = min(k.seed, first.get(k.claim, k.seed))
    return sorted(keys, key=lambda k: (tier.get(k.claim) != "full", k.seed is None,
                                       k.seed != first.get(k.claim)))


def run_task(key: TaskKey, settings: RunSettings, *, profile: bool = False) -> dict[str, Any]:
    """Run one task here and return its payload (JSON data; see the module docstring).

    ``profile``: also split each phase's time into training, evaluation and the rest
    (:class:`~.time_split.TimeSplit`), as ``payload["split"][phase]``. torch runs
    ``settings.threads`` intra-op threads for the task (default 1: one per Ray worker, whose
    task takes one CPU) and the caller's count is restored afterwards.
    """
    from transformer_math.diagnostics.timing import torch_threads

    with torch_threads(settings.threads):  # the count is restored after: no global leak
        return _run_task(key, settings, profile)


def _run_task(key: TaskKey, settings: RunSettings, profile: bool) -> dict[str, Any]:
    from transformer_math.claims.registry import get_claim, run_claim

    c = get_claim(key.claim)
    start, cpu = time.perf_counter(), time.process_time()
    split: dict[str, dict[str, float]] = {}
    if key.seed is None:
        with _profiled(profile, split, "claim"):
            result = run_claim(c, settings.context())
        payload: dict[str, Any] = {"kind": "claim", "result": encode_result(result)}
    else:
        if not c.seeded:
            raise ValueError(f"claim {c.id!r} does not sweep seeds; run it as one task")
        with _profiled(profile, split, "check"):
            phases = {"check": _one_seed(c, key.seed, settings, None)}
        if c.falsifier is not None and key.seed == settings.seed:
            # the falsifier's first seed decides it alone when a worst-of-seeds margin fails
            # (registry.run_claim); when it does not, this task computes the other seeds' runs
            # with the bug too, so that the assembly has every seed it needs
            bug = c.falsifier.bug
            with _profiled(profile, split, "falsifier"):
                phases["falsifier"] = _one_seed(c, key.seed, settings, bug)
                if settings.seeds > 1 and not _decided_alone(c, settings, phases["falsifier"]):
                    phases["falsifier_more"] = {
                        str(s): _one_seed(c, s, settings, bug)
                        for s in settings.context().seed_values()[1:]}
        payload = {"kind": "seed", "phases": phases}
    payload.update(seconds=time.perf_counter() - start, cpu_seconds=time.process_time() - cpu)
    if profile:
        payload["split"] = split
    return payload


@contextlib.contextmanager
def _profiled(profile: bool, into: dict[str, dict[str, float]], phase: str) -> Any:
    if not profile:
        yield
        return
    from transformer_math.execution.time_split import TimeSplit

    with TimeSplit() as split:
        yield
    into[phase] = split.seconds


def run_task_json(claim: str, seed: int | None, settings: Mapping[str, Any],
                  profile: bool = False) -> dict[str, Any]:
    """:func:`run_task` with plain arguments (what a Ray task receives)."""
    return run_task(TaskKey(claim, seed), RunSettings(**settings), profile=profile)


def _one_seed(c: Any, seed: int, settings: RunSettings, bug: str | None) -> Any:
    import dataclasses

    from transformer_math.claims.seeds import SeedCollected, SeedHook, SeedRun

    ctx = dataclasses.replace(settings.context(), seed_hook=SeedHook(only=seed))
    start = time.perf_counter()
    with bugs.recording() as reached, (bugs.plant(bug) if bug else contextlib.nullcontext()):
        try:
            c.check(ctx)
        except SeedCollected as got:
            return codec.encode(got.run)
        except Exception as exc:  # the assembly reports it as the check's failure
            error = f"{type(exc).__name__}: {exc}"
            tb = traceback.format_exc(limit=4)
        else:
            error, tb = "the check finished without sweeping its seeds (over_seeds)", ""
    return codec.encode(SeedRun(seed=seed, values={}, seconds=time.perf_counter() - start,
                                reached=sorted(reached), error=f"{error}\n{tb}".strip()))


def _decided_alone(c: Any, settings: RunSettings, data: Any) -> bool:
    """Whether the falsifier's run of the first seed (``data``) decides it alone: the check
    with the bug planted, on that seed only, fails a worst-of-seeds margin."""
    import dataclasses

    from transformer_math.claims.registry import run_falsifier, worst_seed_failure
    from transformer_math.claims.seeds import SeedHook

    run = codec.decode(data)
    if run.error is not None:
        return False
    ctx = dataclasses.replace(settings.context(), seeds=1,
                              seed_hook=SeedHook(cached={run.seed: run}))
    evidence, error = run_falsifier(c, ctx)
    return error is None and worst_seed_failure(evidence) is not None


def encode_result(result: Any) -> dict[str, Any]:
    """A ``ClaimResult`` as codec data (the claim by id)."""
    return {"claim": result.claim.id,
            "evidence": codec.encode(result.evidence),
            "falsifier_evidence": codec.encode(result.falsifier_evidence),
            "falsifier_caught": result.falsifier_caught,
            "error": result.error,
            "reached": sorted(result.reached),
            "seconds": result.seconds,
            "timing": codec.encode(result.timing)}


def decode_result(data: Mapping[str, Any]) -> Any:
    """The ``ClaimResult`` :func:`encode_result` wrote (``CodecError`` if it is not one)."""
    from transformer_math.claims.registry import ClaimResult, Evidence, Verdict, get_claim

    try:
        claim = get_claim(data["claim"])
        evidence = codec.decode(data["evidence"])
        f_evidence = codec.decode(data["falsifier_evidence"])
        caught, error = data["falsifier_caught"], data["error"]
        reached, seconds = data["reached"], data["seconds"]
        timing = codec.decode(data["timing"])
    except (KeyError, TypeError) as exc:
        raise codec.CodecError(f"not a claim result: {exc}") from None
    for e in (evidence, f_evidence):
        if e is None and e is f_evidence:
            continue
        if not isinstance(e, Evidence) or not isinstance(e.verdict, Verdict):
            raise codec.CodecError("a claim result's evidence must be Evidence with a Verdict")
    if not (caught is None or isinstance(caught, bool)) or not (
            error is None or isinstance(error, str)):
        raise codec.CodecError("falsifier_caught must be a bool or null, error a string or null")
    # A verdict is recomputed from its own margins, never trusted (issue 39): an edited verdict
    # or a caught falsifier whose run did not fail is refused.
    from transformer_math.claims.registry import _inconsistency

    for name, e in (("verdict", evidence), ("falsifier verdict", f_evidence)):
        if e is not None and error is None and (why := _inconsistency(e)) is not None:
            raise codec.CodecError(f"the logged {name} is not the one its margins imply: {why}")
    if caught and (f_evidence is None or f_evidence.verdict is not Verdict.FAILED):
        raise codec.CodecError("falsifier_caught is true but the falsifier's verdict is not "
                               "'failed'")
    if not (isinstance(reached, list) and all(isinstance(r, str) for r in reached)):
        raise codec.CodecError("reached must be a list of bug names")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not isinstance(
            timing, dict):
        raise codec.CodecError("seconds must be a number and timing an object")
    return ClaimResult(claim=claim, evidence=evidence, seconds=float(seconds),
                       falsifier_evidence=f_evidence, falsifier_caught=caught, error=error,
                       reached=frozenset(reached), timing=timing)


def _seed_run(data: Any, key: TaskKey, phase: str) -> Any:
    from transformer_math.claims.seeds import SeedRun

    run = codec.decode(data)
    if not isinstance(run, SeedRun) or run.seed != key.seed:
        raise codec.CodecError(f"{key.label()} {phase}: not that seed's run")
    return run


def validate_payload(key: TaskKey, payload: Any) -> None:
    """Raise ``CodecError`` unless ``payload`` is a well-formed payload of task ``key``."""
    if not isinstance(payload, Mapping) or payload.get("kind") not in PAYLOAD_KINDS:
        raise codec.CodecError(f"{key.label()}: payload must be an object with kind "
                               f"{' or '.join(PAYLOAD_KINDS)}")
    for name in ("seconds", "cpu_seconds"):
        x = payload.get(name, 0.0)
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not x >= 0:
            raise codec.CodecError(f"{key.label()}: {name} must be a non-negative number")
    if "seconds" not in payload:
        raise codec.CodecError(f"{key.label()}: a payload has its seconds")
    split = payload.get("split", {})
    if not isinstance(split, Mapping) or not all(
            isinstance(part, Mapping) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                for v in part.values()) for part in split.values()):
        raise codec.CodecError(f"{key.label()}: split must map phases to seconds by part")
    if (payload["kind"] == "claim") != (key.seed is None):
        raise codec.CodecError(f"{key.label()}: payload kind {payload['kind']!r} does not fit")
    if payload["kind"] == "claim":
        decode_result(payload.get("result", {}))
        return
    phases = payload.get("phases")
    if not isinstance(phases, Mapping) or "check" not in phases or not set(phases) <= {
            "check", "falsifier", "falsifier_more"}:
        raise codec.CodecError(f"{key.label()}: phases must hold 'check' (and 'falsifier', "
                               "'falsifier_more')")
    for phase, data in phases.items():
        if phase != "falsifier_more":
            _seed_run(data, key, phase)
    for s, data in _more_runs(key, phases).items():
        _seed_run(data, TaskKey(key.claim, s), "falsifier_more")


def _more_runs(key: TaskKey, phases: Mapping[str, Any]) -> dict[int, Any]:
    """The other seeds' falsifier runs a first seed's task computed (``falsifier_more``)."""
    more = phases.get("falsifier_more", {})
    if not isinstance(more, Mapping) or not all(
            isinstance(s, str) and s.lstrip("-").isdigit() for s in more):
        raise codec.CodecError(f"{key.label()}: falsifier_more must map seeds to runs")
    return {int(s): data for s, data in more.items()}


def assemble(claim: Any, settings: RunSettings,
             payloads: Mapping[TaskKey, Mapping[str, Any]]) -> Any:
    """The claim's ``ClaimResult`` from its tasks' payloads (every task of the claim done)."""
    from transformer_math.claims.registry import run_claim
    from transformer_math.claims.seeds import SeedHook

    whole = payloads.get(TaskKey(claim.id, None))
    if whole is not None:
        result = decode_result(whole["result"])
        _task_timing(result, [whole])
        return result
    seeds = settings.context().seed_values()
    missing = [s for s in seeds if TaskKey(claim.id, s) not in payloads]
    if missing:
        raise ValueError(f"{claim.id}: seeds {missing} have no result")

    def hook_for(phase: str) -> SeedHook:
        runs = {}
        for s in seeds:
            key = TaskKey(claim.id, s)
            phases = payloads[key]["phases"]
            if phase in phases:
                runs[s] = _seed_run(phases[phase], key, phase)
            if phase == "falsifier":
                for other, data in _more_runs(key, phases).items():
                    runs.setdefault(other, _seed_run(data, TaskKey(claim.id, other), phase))
        return SeedHook(cached=runs)

    result = run_claim(claim, settings.context(), seed_hook_for=hook_for)
    _task_timing(result, [payloads[TaskKey(claim.id, s)] for s in seeds])
    return result


def _task_timing(result: Any, tasks: Sequence[Mapping[str, Any]]) -> None:
    """The tasks' wall and CPU seconds, and their time split by phase when profiled."""
    from transformer_math.execution.time_split import add_splits

    result.timing["tasks_s"] = round(sum(float(p["seconds"]) for p in tasks), 3)
    result.timing["tasks_cpu_s"] = round(sum(float(p.get("cpu_seconds", 0.0)) for p in tasks), 3)
    split: dict[str, dict[str, float]] = {}
    for p in tasks:
        for phase, part in p.get("split", {}).items():
            add_splits(split.setdefault(phase, {}), part)
    if split:
        result.timing["split"] = {phase: {k: round(v, 3) for k, v in part.items()}
                                  for phase, part in split.items()}
