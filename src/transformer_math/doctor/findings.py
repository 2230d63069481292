"""What a doctor check reports: a :class:`Finding` per measurement, a :class:`Diagnosis` per run.

A finding carries the number that shows the problem and the threshold it was judged against, so
a reader can re-judge it: ``measured`` and ``threshold`` with ``comparison`` saying which side of
the threshold is a problem (``"above"``: measured > threshold is flagged). ``severity`` follows
from that comparison in the check's code, never from a literal verdict.

Severity levels: ``ok`` (checked, nothing wrong), ``info`` (a fact worth knowing, not a fault,
e.g. "no induction head yet" on a random checkpoint), ``warning`` (likely wrong for the stated
use: the target context, the training budget), ``error`` (wrong whatever the use: causal leakage,
NaN, a cache that disagrees with a full forward). ``tmath doctor`` exits 1 when any finding is a
warning or an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any


class Severity(IntEnum):
    OK = 0
    INFO = 1
    WARNING = 2
    ERROR = 3

    def __str__(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Finding:
    """One measured fact about the examined model.

    ``check``: the registered check's name (``"attention.saturation"``); ``subject``: what was
    measured (``"layer 3 head 5"``, ``"rope pair 12"``, ``""`` for the whole model);
    ``summary``: one line with the number; ``meaning``: what it implies; ``fix``: what to do;
    ``source``: the seed section or paper (``"000:1665 (manual row 1), §8.3.1"``).
    """

    check: str
    severity: Severity
    summary: str
    measured: float | None = None
    threshold: float | None = None
    comparison: str = ""  # "above" | "below" | "" (no threshold)
    subject: str = ""
    meaning: str = ""
    fix: str = ""
    source: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def flagged(self) -> bool:
        """Warning or error: what makes ``tmath doctor`` exit 1."""
        return self.severity >= Severity.WARNING

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check, "severity": str(self.severity), "subject": self.subject,
            "summary": self.summary, "measured": _number(self.measured),
            "threshold": _number(self.threshold), "comparison": self.comparison,
            "meaning": self.meaning, "fix": self.fix, "source": self.source,
            "details": _jsonable(dict(self.details)),
        }


def beyond(measured: float, threshold: float, comparison: str) -> bool:
    """Whether ``measured`` is on the problem side of ``threshold`` (NaN always is)."""
    if math.isnan(measured):
        return True
    if comparison == "above":
        return measured > threshold
    if comparison == "below":
        return measured < threshold
    raise ValueError(f"comparison must be 'above' or 'below', got {comparison!r}")


def judged(check: str, measured: float, threshold: float, comparison: str, *,
           bad: Severity = Severity.WARNING, summary: str, **text: Any) -> Finding:
    """A finding whose severity is ``bad`` when ``measured`` is beyond ``threshold``, else ok."""
    severity = bad if beyond(measured, threshold, comparison) else Severity.OK
    return Finding(check, severity, summary, float(measured), float(threshold), comparison,
                   **text)


@dataclass
class Diagnosis:
    """Every finding of one doctor run, with what was skipped and how long each check took."""

    target: str
    engine: str
    findings: list[Finding] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # check -> why not applicable
    seconds: dict[str, float] = field(default_factory=dict)  # check -> wall seconds
    figures: dict[str, Any] = field(default_factory=dict)  # figure name -> plot data
    options: dict[str, Any] = field(default_factory=dict)
    budget: dict[str, Any] | None = None  # a budgeted run's plan (doctor/budget.py Plan)

    @property
    def flagged(self) -> list[Finding]:
        return [f for f in self.findings if f.flagged]

    @property
    def exit_code(self) -> int:
        """0 when nothing is at warning level or above, else 1."""
        return 1 if self.flagged else 0

    def by_check(self, name: str) -> list[Finding]:
        return [f for f in self.findings if f.check == name]

    def flagged_checks(self) -> list[str]:
        """Names of the checks with a warning or an error, in run order, each once."""
        return list(dict.fromkeys(f.check for f in self.flagged))

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target, "engine": self.engine, "exit_code": self.exit_code,
            "options": _jsonable(self.options),
            "findings": [f.to_json() for f in self.findings],
            "skipped": dict(self.skipped),
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            "figures": _jsonable(self.figures),
            "budget": _jsonable(self.budget),
        }


def _number(x: float | None) -> float | str | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else str(x)  # JSON has no inf/nan


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return _number(value)
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    return str(value)
