"""Margins across seeds: is a verdict firmer than the run-to-run spread?

A check's pass conditions are :class:`~transformer_math.claims.registry.Margin` s (value,
threshold, sense). Run the check for several seeds; for each named margin take

- ``min_slack``: the smallest slack over the seeds (negative: some seed fails);
- ``spread``: the sample standard deviation of the value over the seeds;
- ``firm``: every seed holds and ``min_slack >= factor * spread`` (``factor = 3`` by default,
  issue 12: "the margin at least three times the spread between those seeds").

A claim is firm when every margin it reports is firm for every seed, it reports the same margin
names for every seed, its falsifier (if any) is caught at every seed, and (unless it is
``cited``) it reports at least one margin. A margin whose
value does not move between seeds (spread 0: an exact identity, a count) is firm when it holds.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from transformer_math.claims.registry import (
    Claim,
    ClaimResult,
    Context,
    Size,
    Verdict,
    run_claim,
)

FACTOR = 3.0


@dataclass
class MarginSpread:
    """One named margin of one claim over the seeds."""

    name: str
    sense: str
    threshold: float
    values: list[float]
    slacks: list[float]

    @property
    def min_slack(self) -> float:
        return min(self.slacks) if self.slacks else -math.inf

    @property
    def spread(self) -> float:
        finite = [v for v in self.values if math.isfinite(v)]
        if len(finite) != len(self.values):
            return math.inf
        return statistics.stdev(finite) if len(finite) > 1 else 0.0

    def firm(self, factor: float = FACTOR) -> bool:
        return self.min_slack >= 0 and self.min_slack >= factor * self.spread

    def to_json(self, factor: float = FACTOR) -> dict[str, Any]:
        ratio = self.min_slack / self.spread if self.spread > 0 else None
        return {"name": self.name, "sense": self.sense, "threshold": self.threshold,
                "values": self.values, "min_slack": self.min_slack, "spread": self.spread,
                "slack_over_spread": ratio, "firm": self.firm(factor)}


@dataclass
class ClaimSpread:
    """One claim over the seeds: its verdicts and its margins."""

    claim_id: str
    seeds: list[int]
    verdicts: list[str]
    margins: list[MarginSpread] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def firm(self, factor: float = FACTOR) -> bool:
        return not self.problems and all(m.firm(factor) for m in self.margins)

    def to_json(self, factor: float = FACTOR) -> dict[str, Any]:
        return {"id": self.claim_id, "seeds": self.seeds, "verdicts": self.verdicts,
                "firm": self.firm(factor), "problems": self.problems,
                "margins": [m.to_json(factor) for m in self.margins]}


def spread_of(claim: Claim, results: Sequence[ClaimResult], seeds: Sequence[int]) -> ClaimSpread:
    """Collect the margins of ``results`` (one per seed, same claim) into a :class:`ClaimSpread`."""
    verdicts = [r.evidence.verdict.value for r in results]
    out = ClaimSpread(claim.id, list(seeds), verdicts)
    if all(v == Verdict.CITED.value for v in verdicts):
        return out
    names: list[str] = []
    for r in results:
        for m in r.evidence.margins:
            if m.name not in names:
                names.append(m.name)
    if not names:
        out.problems.append("reports no margin")
    for seed, r in zip(seeds, results, strict=True):
        if r.error is not None:
            out.problems.append(f"seed {seed}: {r.error}")
        if r.evidence.verdict is Verdict.FAILED:
            out.problems.append(f"seed {seed}: failed")
        if r.falsifier_caught is False:
            out.problems.append(f"seed {seed}: falsifier not caught")
        have = {m.name for m in r.evidence.margins}
        missing = [n for n in names if n not in have]
        if missing:
            out.problems.append(f"seed {seed}: no margin {missing}")
    for name in names:
        found = [next((m for m in r.evidence.margins if m.name == name), None) for r in results]
        present = [m for m in found if m is not None]
        out.margins.append(MarginSpread(
            name, present[0].sense, present[0].threshold,
            [m.value for m in present], [m.slack for m in present],
        ))
    return out


def sweep(
    claims: Iterable[Claim],
    seeds: Sequence[int],
    *,
    size: Size = Size.TINY,
    on_result: Callable[[Claim, int, ClaimResult], None] | None = None,
) -> list[ClaimSpread]:
    """Run every claim for every seed (falsifiers included, as ``tmath verify`` does)."""
    spreads = []
    for c in claims:
        results = []
        for seed in seeds:
            result = run_claim(c, Context(seed=seed, size=size))
            if on_result is not None:
                on_result(c, seed, result)
            results.append(result)
        spreads.append(spread_of(c, results, seeds))
    return spreads
