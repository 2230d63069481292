"""Training claims over several seeds: per-seed values, mean, spread, and worst-seed margins.

A trained run is one draw; a verdict resting on one draw says little (issue 14, rule 4). A
training claim runs ``ctx.seeds`` seeds (default 3, ``tmath verify --seeds N``) through
:func:`over_seeds`, reports every seed's numbers in ``Evidence.per_seed`` and decides on the
interval over the seeds: :meth:`PerSeed.at_least` is the margin ``min over seeds >= threshold``
and :meth:`PerSeed.at_most` the margin ``max over seeds <= threshold``, so every seed must clear
the threshold. The mean and the sample standard deviation (``spread``) are reported beside.

A seed's run is independent of the others (``ctx.with_seed(s)`` is a fresh context, and no
global RNG is used), so the seeds can run anywhere (issue 19): :class:`SeedHook` on the
context lets an executor (:mod:`transformer_math.execution`) run one seed of a check alone
(``only``: :func:`over_seeds` computes that seed and stops the check with
:class:`SeedCollected`), hand over seeds computed elsewhere (``cached``: the check then
decides on them without training) and hear of every seed computed here (``on_seed``: the
crash-safe results log).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from transformer_math import bugs
from transformer_math.claims.registry import Context, Margin, at_least, at_most
from transformer_math.claims.seed_hook import (
    SeedCollected,
    SeedFailedElsewhereError,
    SeedHook,
    SeedRun,
)

__all__ = [
    "PerSeed",
    "SeedCollected",
    "SeedFailedElsewhereError",
    "SeedHook",
    "SeedRun",
    "over_seeds",
]


@dataclass
class PerSeed:
    """Named scalar results of one run per seed (``values[name][i]`` belongs to ``seeds[i]``)."""

    seeds: list[int]
    values: dict[str, list[float]] = field(default_factory=dict)
    runs: list[Any] = field(default_factory=list)

    def __getitem__(self, name: str) -> list[float]:
        return self.values[name]

    def mean(self, name: str) -> float:
        return statistics.fmean(self.values[name])

    def spread(self, name: str) -> float:
        """Sample standard deviation over the seeds (0 for one seed; inf if one is not finite)."""
        v = self.values[name]
        if not all(math.isfinite(x) for x in v):
            return math.inf
        return statistics.stdev(v) if len(v) > 1 else 0.0

    def lo(self, name: str) -> float:
        v = self.values[name]
        return -math.inf if any(math.isnan(x) for x in v) else min(v)

    def hi(self, name: str) -> float:
        v = self.values[name]
        return math.inf if any(math.isnan(x) for x in v) else max(v)

    def at_least(self, name: str, threshold: float, label: str | None = None) -> Margin:
        """Every seed's ``name`` is at least ``threshold`` (the margin's value: the minimum)."""
        return dataclasses.replace(
            at_least(f"{label or name} (worst of {len(self.seeds)} seeds)", self.lo(name),
                     threshold), worst_of_seeds=len(self.seeds))

    def at_most(self, name: str, threshold: float, label: str | None = None) -> Margin:
        """Every seed's ``name`` is at most ``threshold`` (the margin's value: the maximum)."""
        return dataclasses.replace(
            at_most(f"{label or name} (worst of {len(self.seeds)} seeds)", self.hi(name),
                    threshold), worst_of_seeds=len(self.seeds))

    def to_json(self) -> dict[str, Any]:
        return {
            "seeds": list(self.seeds),
            "values": {k: list(v) for k, v in self.values.items()},
            "mean": {k: self.mean(k) for k in self.values},
            "spread": {k: self.spread(k) for k in self.values},
            "min": {k: self.lo(k) for k in self.values},
            "max": {k: self.hi(k) for k in self.values},
        }


def _one_run(ctx: Context, s: int, run: Callable[[Context], Any]) -> SeedRun:
    start = time.perf_counter()
    with bugs.recording() as reached:
        result = run(ctx.with_seed(s))
    extra = None
    if isinstance(result, tuple):
        result, extra = result
    return SeedRun(seed=s, values={k: float(v) for k, v in result.items()}, extra=extra,
                   seconds=time.perf_counter() - start, reached=sorted(reached))


def over_seeds(
    ctx: Context,
    run: Callable[[Context], Mapping[str, float] | tuple[Mapping[str, float], Any]],
) -> PerSeed:
    """Run ``run(ctx_for_seed)`` for each of ``ctx.seed_values()`` and collect its numbers.

    ``run`` returns a mapping of scalar results (the same names for every seed), or a pair
    ``(mapping, anything)`` whose second item is kept in ``PerSeed.runs`` (a figure's data).
    Progress is reported as the fraction of seeds done. ``ctx.seed_hook`` (a :class:`SeedHook`)
    runs one seed alone, supplies seeds computed elsewhere, or hears of each computed seed; a
    check calls this once (a second sweep in one check is an error under a hook).
    """
    seeds = ctx.seed_values()
    hook = ctx.seed_hook
    if hook is not None:
        hook.calls += 1
        if hook.calls > 1:
            raise ValueError("a check under a SeedHook called over_seeds twice; the executor "
                             "distributes one sweep per check")
        if hook.only is not None:
            if hook.only not in seeds:
                raise ValueError(f"seed {hook.only} is not one of this run's seeds {seeds}")
            raise SeedCollected(_one_run(ctx, hook.only, run))
    out = PerSeed(seeds=seeds)
    for i, s in enumerate(seeds):
        one = hook.cached.get(s) if hook is not None else None
        if one is not None:
            bugs.note_reached(set(one.reached))
            if one.error is not None:
                raise SeedFailedElsewhereError(f"seed {s}: {one.error}")
        else:
            one = _one_run(ctx, s, run)
            if hook is not None and hook.on_seed is not None:
                hook.on_seed(one)
        if hook is not None:
            hook.used.append((one, s in hook.cached))
        result = one.values
        if i == 0:
            out.values = {k: [] for k in result}
        elif set(result) != set(out.values):
            raise ValueError(f"seed {s} reported {sorted(result)}, seed {seeds[0]} "
                             f"{sorted(out.values)}")
        for k, v in result.items():
            out.values[k].append(float(v))
        out.runs.append(one.extra)
        ctx.report_progress((i + 1) / len(seeds))
    return out
