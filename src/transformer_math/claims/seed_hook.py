"""How an executor steers a check's sweep over seeds: :class:`SeedHook` and the runs it carries.

A training claim's check calls :func:`transformer_math.claims.seeds.over_seeds` once; an executor
(:mod:`transformer_math.execution`) puts a :class:`SeedHook` on the check's context to run one
seed alone (``only``: the sweep computes it and raises :class:`SeedCollected`), to hand over
seeds computed elsewhere (``cached``) or to hear of every seed computed here (``on_seed``).

These types sit below both ``claims.registry`` (whose ``run_claim`` builds hooks for the
falsifier) and ``claims.seeds`` (whose ``over_seeds`` obeys them, and which needs the registry's
``Context`` and margins), so the two no longer import each other (issue 37, item 3). They hold
data only and import nothing of the project. ``claims.seeds`` re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SeedCollected", "SeedFailedElsewhereError", "SeedHook", "SeedRun"]


@dataclass
class SeedRun:
    """One seed's run of a check's sweep: its named numbers, the run's extra item (figure
    data), its seconds, the bug sites it queried (:func:`bugs.recording`; replayed when the
    run is used elsewhere, so a claim's reached sites do not depend on where its seeds ran),
    and the error message when the run raised instead."""

    seed: int
    values: dict[str, float]
    extra: Any = None
    seconds: float = 0.0
    reached: list[str] = field(default_factory=list)
    error: str | None = None


class SeedCollected(BaseException):
    """Raised by :func:`over_seeds` in a check run for one seed (``SeedHook.only``): it carries
    that seed's run out of the check. A ``BaseException`` so that no check's ``except
    Exception`` swallows it."""

    def __init__(self, run: SeedRun) -> None:
        super().__init__(f"seed {run.seed} collected")
        self.run = run


class SeedFailedElsewhereError(RuntimeError):
    """A seed handed over in ``SeedHook.cached`` whose run raised where it ran."""


@dataclass
class SeedHook:
    """How :func:`over_seeds` treats the seeds of the one sweep of a check.

    - ``only``: compute this seed alone and raise :class:`SeedCollected` with its run;
    - ``cached``: runs computed elsewhere, used instead of computing (an errored run re-raises
      as :class:`SeedFailedElsewhereError`);
    - ``on_seed``: called with every run computed here, as soon as it finished.
    """

    only: int | None = None
    cached: dict[int, SeedRun] = field(default_factory=dict)
    on_seed: Callable[[SeedRun], None] | None = None
    calls: int = 0
    #: the runs the sweep used, with whether each came from ``cached``
    used: list[tuple[SeedRun, bool]] = field(default_factory=list)
