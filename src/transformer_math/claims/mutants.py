"""The bug zoo: every planted bug against the claims that can reach it (mutation testing).

A claim that cannot fail proves nothing; a claim that fails on its own falsifier proves it can
catch *one* bug. The zoo asks the converse question for every bug of :data:`bugs.BUGS`: which
claims catch it? For each bug we run every claim whose clean run *passed the bug's site*
(:func:`bugs.recording`; a claim that never executes the site cannot be affected by it, so
running it would only cost time) with the bug planted, and record

- ``killed``: the check completed and its verdict differs from the clean run's (``failed``, or
  ``refuted`` turned ``verified``, ...);
- ``survived``: the check completed with the clean verdict;
- ``crashed``: the check raised (not a kill: a crash says nothing about the claim's numbers).

A bug no claim kills is a missing claim (issue 14: "a bug only the tests catch is a missing
claim"). ``first_kill`` stops a bug's row at its first kill (claims whose falsifier is that bug
are tried first, then the others in order of their clean run time): CI uses it to show every
bug is killed in a few minutes; without it the whole matrix is filled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from transformer_math import bugs
from transformer_math.claims.registry import (
    Claim,
    ClaimResult,
    Context,
    Verdict,
    run_check,
    run_claim,
)

KILLED, SURVIVED, CRASHED = "killed", "survived", "crashed"


@dataclass
class BugRow:
    """One bug's row of the kill matrix."""

    bug: bugs.Bug
    outcomes: dict[str, str] = field(default_factory=dict)  # claim id -> killed|survived|crashed
    verdicts: dict[str, str] = field(default_factory=dict)  # claim id -> verdict under the bug
    reached_by: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def ids(self, outcome: str) -> list[str]:
        return [c for c, o in self.outcomes.items() if o == outcome]

    @property
    def killed(self) -> bool:
        return any(o == KILLED for o in self.outcomes.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.bug.name,
            "module": self.bug.module,
            "description": self.bug.description,
            "seen_in": self.bug.seen_in,
            "test": self.bug.test or None,
            "reached_by": list(self.reached_by),
            "killed_by": self.ids(KILLED),
            "survived": self.ids(SURVIVED),
            "crashed": self.ids(CRASHED),
            "verdicts": dict(self.verdicts),
            "killed": self.killed,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class ZooReport:
    """The clean runs, and one :class:`BugRow` per bug."""

    baseline: dict[str, ClaimResult]
    rows: list[BugRow]
    seconds: float
    first_kill: bool

    @property
    def unhealthy(self) -> list[str]:
        """Claims whose clean run is already a problem (excluded from killing anything)."""
        return [cid for cid, r in self.baseline.items()
                if r.evidence.verdict is Verdict.FAILED or not r.expected_met]

    @property
    def survivors(self) -> list[BugRow]:
        """Bugs no claim kills and no named test kills (``Bug.test``)."""
        return [r for r in self.rows if not r.killed and not r.bug.test]

    @property
    def test_killed(self) -> list[BugRow]:
        """Bugs no claim kills that a named test of the implementation kills (``Bug.test``)."""
        return [r for r in self.rows if not r.killed and r.bug.test]

    def summary(self) -> dict[str, Any]:
        return {
            "bugs": len(self.rows),
            "killed": sum(1 for r in self.rows if r.killed),
            "survivors": [r.bug.name for r in self.survivors],
            "unreached": [r.bug.name for r in self.rows if not r.reached_by and not r.bug.test],
            "killed_by_tests": {r.bug.name: r.bug.test for r in self.test_killed},
            "claims": len(self.baseline),
            "unhealthy_claims": self.unhealthy,
            "claim_runs": sum(len(r.outcomes) for r in self.rows),
            "first_kill": self.first_kill,
            "seconds": round(self.seconds, 3),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "bugs": [r.to_json() for r in self.rows],
            "reached": {cid: sorted(r.reached) for cid, r in self.baseline.items()},
        }


def select_bugs(pattern: str | None = None) -> list[bugs.Bug]:
    """Every bug declared in the library (all its modules imported), optionally filtered by a
    regex. Bugs declared outside ``transformer_math`` (tests' demo bugs) are left out."""
    import re

    registry = bugs.load_all()
    names = sorted(n for n, b in registry.items() if b.module.startswith("transformer_math."))
    if pattern:
        rx = re.compile(pattern)
        names = [n for n in names if rx.search(n)]
    return [registry[n] for n in names]


def run_zoo(
    claims: Sequence[Claim],
    zoo: Iterable[bugs.Bug],
    ctx: Context,
    *,
    first_kill: bool = False,
    every_claim: bool = False,
    on_step: Callable[[str, str], None] | None = None,
    baseline: dict[str, ClaimResult] | None = None,
) -> ZooReport:
    """Run each bug of ``zoo`` against the claims that reach it (``every_claim``: all claims).

    ``on_step(bug, claim_id)`` is called before each run (progress display). ``baseline``: clean
    results of these claims already run with the same context (they are run otherwise).
    """
    start = time.perf_counter()
    baseline = dict(baseline or {})
    for c in claims:
        if c.id in baseline:
            continue
        if on_step is not None:
            on_step("(clean)", c.id)
        baseline[c.id] = run_claim(c, ctx, falsifier=False)
    baseline = {c.id: baseline[c.id] for c in claims}
    healthy = [c for c in claims if baseline[c.id].evidence.verdict is not Verdict.FAILED
               and baseline[c.id].expected_met]
    rows: list[BugRow] = []
    for bug in zoo:
        row = BugRow(bug)
        t0 = time.perf_counter()
        reach = [c for c in healthy if bug.name in baseline[c.id].reached]
        row.reached_by = [c.id for c in reach]
        candidates = list(healthy) if every_claim else reach
        candidates.sort(key=lambda c: (not _falsifier_is(c, bug.name),
                                       baseline[c.id].seconds))
        for c in candidates:
            if on_step is not None:
                on_step(bug.name, c.id)
            with bugs.plant(bug.name):
                evidence, error = run_check(c.check, ctx)
            row.verdicts[c.id] = evidence.verdict.value
            if error is not None:
                row.outcomes[c.id] = CRASHED
            elif evidence.verdict is not baseline[c.id].evidence.verdict:
                row.outcomes[c.id] = KILLED
                if first_kill:
                    break
            else:
                row.outcomes[c.id] = SURVIVED
        row.seconds = time.perf_counter() - t0
        rows.append(row)
    return ZooReport(baseline, rows, time.perf_counter() - start, first_kill)


def _falsifier_is(c: Claim, bug: str) -> bool:
    return c.falsifier is not None and c.falsifier.bug == bug
