"""Training claims over several seeds: per-seed values, mean, spread, and worst-seed margins.

A trained run is one draw; a verdict resting on one draw says little (issue 14, rule 4). A
training claim runs ``ctx.seeds`` seeds (default 3, ``tmath verify --seeds N``) through
:func:`over_seeds`, reports every seed's numbers in ``Evidence.per_seed`` and decides on the
interval over the seeds: :meth:`PerSeed.at_least` is the margin ``min over seeds >= threshold``
and :meth:`PerSeed.at_most` the margin ``max over seeds <= threshold``, so every seed must clear
the threshold. The mean and the sample standard deviation (``spread``) are reported beside.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from transformer_math.claims.registry import Context, Margin, at_least, at_most


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
        return at_least(f"{label or name} (worst of {len(self.seeds)} seeds)", self.lo(name),
                        threshold)

    def at_most(self, name: str, threshold: float, label: str | None = None) -> Margin:
        """Every seed's ``name`` is at most ``threshold`` (the margin's value: the maximum)."""
        return at_most(f"{label or name} (worst of {len(self.seeds)} seeds)", self.hi(name),
                       threshold)

    def to_json(self) -> dict[str, Any]:
        return {
            "seeds": list(self.seeds),
            "values": {k: list(v) for k, v in self.values.items()},
            "mean": {k: self.mean(k) for k in self.values},
            "spread": {k: self.spread(k) for k in self.values},
            "min": {k: self.lo(k) for k in self.values},
            "max": {k: self.hi(k) for k in self.values},
        }


def over_seeds(
    ctx: Context,
    run: Callable[[Context], Mapping[str, float] | tuple[Mapping[str, float], Any]],
) -> PerSeed:
    """Run ``run(ctx_for_seed)`` for each of ``ctx.seed_values()`` and collect its numbers.

    ``run`` returns a mapping of scalar results (the same names for every seed), or a pair
    ``(mapping, anything)`` whose second item is kept in ``PerSeed.runs`` (a figure's data).
    Progress is reported as the fraction of seeds done.
    """
    seeds = ctx.seed_values()
    out = PerSeed(seeds=seeds)
    for i, s in enumerate(seeds):
        result = run(ctx.with_seed(s))
        extra = None
        if isinstance(result, tuple):
            result, extra = result
        if i == 0:
            out.values = {k: [] for k in result}
        elif set(result) != set(out.values):
            raise ValueError(f"seed {s} reported {sorted(result)}, seed {seeds[0]} "
                             f"{sorted(out.values)}")
        for k, v in result.items():
            out.values[k].append(float(v))
        out.runs.append(extra)
        ctx.report_progress((i + 1) / len(seeds))
    return out
