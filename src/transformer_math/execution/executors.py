"""Where the tasks of a run execute: here, one after another (``inline``), or as Ray tasks on a
local Ray started on demand or on a cluster (``ray``).

:func:`execute` plans the run's tasks (:func:`~.tasks.plan`), skips those a results log already
holds (``--resume``), runs the rest, appends each to the log as it finishes and assembles each
claim once its last task is in. Both executors run the same :func:`~.tasks.run_task`; a Ray
task is that function in a worker process, so results are equal seed by seed (tests/execution).

Ray (https://docs.ray.io, ``ray.remote`` tasks) retries a task whose worker process died
(``max_retries``, system failures only: an exception in a check is a result, never retried).
The driver alone writes the log, on a task's completion, so a retried task is recorded once.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformer_math.execution.log import ResultsLog
from transformer_math.execution.tasks import (
    RunSettings,
    TaskKey,
    assemble,
    plan,
    run_task,
    run_task_json,
    schedule,
)

EXECUTORS = ("inline", "ray")
MAX_RETRIES = 3  # a task whose worker died is run again up to this many times
OBJECT_STORE_BYTES = 256 * 2**20  # payloads are kilobytes; Ray's default takes 30 % of RAM


class ExecutorError(RuntimeError):
    """Ray is missing, or the cluster at ``--address`` cannot be reached (a user's setup)."""


@dataclass
class RunInfo:
    """How a run executed: the executor, its workers, the Ray address, tasks run and reused."""

    executor: str
    workers: int
    address: str | None = None
    tasks: int = 0
    resumed: int = 0
    wall_seconds: float = 0.0
    log: str | None = None
    stale: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"executor": self.executor, "workers": self.workers, "address": self.address,
                "tasks": self.tasks, "resumed": self.resumed,
                "wall_seconds": round(self.wall_seconds, 3), "log": self.log,
                "stale_log_lines": self.stale, "notes": list(self.notes)}


Progress = Callable[[TaskKey, int, int], None]
"""``progress(key, done, total)``: called when a task finished (``done`` of ``total``)."""


def execute(
    claims: Sequence[Any],
    settings: RunSettings,
    *,
    workers: int = 1,
    address: str | None = None,
    log: ResultsLog | None = None,
    progress: Progress | None = None,
    profile: bool = False,
) -> tuple[list[Any], RunInfo]:
    """Run ``claims`` and return their ``ClaimResult`` s (in the claims' order) and a
    :class:`RunInfo`. ``workers == 1`` without an ``address`` runs inline; otherwise on Ray
    (at most ``workers`` tasks at a time; with an ``address`` and ``workers == 1``, as many as
    the cluster schedules). ``profile`` splits each task's time (``execution.time_split``)."""
    start = time.perf_counter()
    executor = "inline" if workers == 1 and address is None else "ray"
    info = RunInfo(executor=executor, workers=workers, address=address,
                   log=str(log.path) if log is not None else None,
                   stale=log.stale if log is not None else 0)
    if log is not None and log.dropped_tail:
        info.notes.append(f"{log.path}: dropped a last line cut short by a crash")
    if executor == "ray":
        _importable_by_workers(claims)
    keys = plan(claims, settings)
    payloads: dict[TaskKey, Any] = {}
    if log is not None:
        payloads.update({k: log.entries[k] for k in keys if k in log.entries})
    info.resumed = len(payloads)
    # Inline, the claims' own order (as before tasks existed); on Ray, the long tasks first.
    order = keys if executor == "inline" else schedule(keys, claims)
    todo = [k for k in order if k not in payloads]
    info.tasks = len(todo)
    if log is not None:
        whole = sum(1 for c in claims if all(k in payloads for k in keys if k.claim == c.id))
        info.notes.append(
            f"resumed {log.path}: of {len(keys)} task(s), {info.resumed} reused from the log "
            f"(their verdicts recomputed from their margins) and {info.tasks} run now; "
            f"{whole} of {len(claims)} claim(s) wholly from the log; {log.stale} stale "
            f"line(s) of changed claims rerun, {1 if log.dropped_tail else 0} cut last line "
            "dropped and rerun")
    versions = {c.id: c.version for c in claims}
    by_claim = {c.id: c for c in claims}
    remaining = {c.id: sum(1 for k in keys if k.claim == c.id) for c in claims}
    for k in payloads:
        remaining[k.claim] -= 1
    results: dict[str, Any] = {}

    def finished(key: TaskKey, payload: dict[str, Any]) -> None:
        payloads[key] = payload
        if log is not None:
            log.append(key, versions[key.claim], payload)
        remaining[key.claim] -= 1
        if progress is not None:
            progress(key, len(payloads) - info.resumed, len(todo))
        if remaining[key.claim] == 0:
            results[key.claim] = _assemble(by_claim[key.claim], settings, payloads)

    for c in claims:  # claims the log already holds completely
        if remaining[c.id] == 0:
            results[c.id] = _assemble(c, settings, payloads)
    if executor == "inline":
        for key in todo:  # run_task restores the caller's thread count itself
            finished(key, run_task(key, settings, profile=profile))
    else:
        _run_on_ray(todo, settings, workers=workers, address=address, finished=finished,
                    profile=profile)
    info.wall_seconds = time.perf_counter() - start
    return [results[c.id] for c in claims], info


def _importable_by_workers(claims: Sequence[Any]) -> None:
    """A Ray worker finds a claim by id in the registry it builds by importing the package, so
    a claim registered from elsewhere (a test, a user's script) exists in the driver only:
    refuse it here instead of letting every task fail with ``no claim with id``."""
    import inspect

    outside = sorted({inspect.unwrap(c.check).__module__ for c in claims
                      if not inspect.unwrap(c.check).__module__.startswith("transformer_math.")})
    if outside:
        ids = [c.id for c in claims
               if inspect.unwrap(c.check).__module__ in outside]
        raise ExecutorError(f"claims {', '.join(ids[:5])}{' ...' if len(ids) > 5 else ''} are "
                            f"registered from {', '.join(outside)}, outside the "
                            "transformer_math package, which Ray workers do not import: run "
                            "them with --workers 1")


def _assemble(claim: Any, settings: RunSettings, payloads: dict[TaskKey, Any]) -> Any:
    from transformer_math.diagnostics.timing import torch_threads

    with torch_threads(settings.threads):
        return assemble(claim, settings, {k: v for k, v in payloads.items()
                                          if k.claim == claim.id})


def _run_on_ray(todo: Sequence[TaskKey], settings: RunSettings, *, workers: int,
                address: str | None, finished: Callable[[TaskKey, dict[str, Any]], None],
                profile: bool) -> None:
    map_on_ray(run_task_json,
               [(key, (key.claim, key.seed, settings.to_json(), profile)) for key in todo],
               workers=workers, address=address, finished=finished)


def map_on_ray(fn: Callable[..., Any], jobs: Sequence[tuple[Any, tuple[Any, ...]]], *,
               workers: int, address: str | None,
               finished: Callable[[Any, Any], None], max_calls: int = 0) -> None:
    """``fn(*args)`` for every ``(key, args)`` of ``jobs`` as a Ray task (a module-level
    ``fn``, one CPU each, rerun up to :data:`MAX_RETRIES` times when its worker dies, never on
    an exception), at most ``workers`` in flight (every job at once with an ``address`` and one
    worker: the cluster schedules them), in the order given; ``finished(key, value)`` as each
    completes; ``max_calls`` > 0: a worker process exits after that many tasks (0: never).
    Raises :class:`ExecutorError` when Ray cannot start.

    Threads: a task takes one CPU, and its worker runs one torch intra-op thread by default
    (the task functions, ``tasks.run_task`` and ``sweep.run_task``, run under
    ``torch_threads(--threads)``, default 1; Ray also sets ``OMP_NUM_THREADS=1`` in a 1-CPU
    task's worker), so ``--workers N`` keeps N threads busy, not N times the cores."""
    ray = start_ray(workers=workers, address=address)
    try:
        remote = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False,
                            max_calls=max_calls)(fn)
        limit = len(jobs) if (address is not None and workers == 1) else workers
        queue = list(jobs)
        pending: dict[Any, Any] = {}
        while queue or pending:
            while queue and len(pending) < limit:
                key, args = queue.pop(0)
                pending[remote.remote(*args)] = key
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                key = pending.pop(ref)
                finished(key, ray.get(ref))
    finally:
        ray.shutdown()


def start_ray(*, workers: int, address: str | None) -> Any:
    """Connect to the Ray cluster at ``address``, or start a local Ray with ``workers`` CPUs
    (no dashboard, a small object store, the workers' logs kept out of the terminal).

    A local Ray's workers run at the driver's priority: Ray starts them at nice 15 by default
    (its ``RAY_worker_niceness``), and on a shared machine any other process then starves the
    run (measured here: a 7 s task took 100 s beside one busy process). A cluster keeps the
    niceness its raylets were started with.
    """
    try:
        import ray
    except ImportError:  # pragma: no cover - ray is a dependency
        raise ExecutorError("Ray is not installed: pip install 'ray>=2.9'") from None
    kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False,
                              "configure_logging": True}
    if address is not None and address != "auto":
        _reachable(address)
        _speaks_grpc(address)
    cores = os.cpu_count() or 1
    if address is None and workers > cores and os.environ.get("TMATH_OVERSUBSCRIBE") != "1":
        import sys

        print(f"note: --workers {workers} capped at this machine's {cores} cores (each worker "
              "is a process of about 200 MB; set TMATH_OVERSUBSCRIBE=1 to start more)",
              file=sys.stderr)
        workers = cores
    try:
        if address is not None:
            package = Path(__file__).resolve().parents[1]
            ray.init(address=address, runtime_env={"py_modules": [str(package)]}, **kwargs)
        else:
            os.environ.setdefault("RAY_worker_niceness", "0")
            ray.init(num_cpus=workers, include_dashboard=False,
                     object_store_memory=OBJECT_STORE_BYTES, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"the Ray cluster at {address}" if address else "a local Ray"
        raise ExecutorError(f"cannot start {where}: {' '.join(str(exc).split())[:300]}"
                            ) from None
    return ray


_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _speaks_grpc(address: str, timeout: float = 5.0) -> None:
    """Fail within seconds when the listener at ``HOST:PORT`` is not a Ray endpoint: Ray's GCS
    and its client server speak gRPC, i.e. HTTP/2, whose server answers a client's connection
    preface with a SETTINGS frame (RFC 9113 §3.4: frame type 0x4 in the fourth byte). A web
    server, a database or any other listener does not (``ray.init`` would retry for minutes)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(_H2_PREFACE)
            head = b""
            while len(head) < 9:
                chunk = conn.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
    except (OSError, ValueError) as exc:
        raise ExecutorError(f"cannot start the Ray cluster at {address}: {host}:{port} does "
                            f"not answer as Ray does ({getattr(exc, 'strerror', None) or exc})"
                            ) from None
    if len(head) < 9 or head[3] != 0x04:
        raise ExecutorError(f"cannot start the Ray cluster at {address}: the listener at "
                            f"{host}:{port} is not a Ray cluster (no gRPC/HTTP-2 answer)")


def _reachable(address: str, timeout: float = 10.0) -> None:
    """Fail fast when nothing listens at ``HOST:PORT`` (``ray.init`` would retry for minutes)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as exc:
        raise ExecutorError(f"cannot start the Ray cluster at {address}: nothing answers at "
                            f"{host}:{port} ({exc.strerror or exc})") from None
