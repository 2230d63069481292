"""The claim registry: every checkable statement of the seeds, with its check and its falsifier.

A claim says where a statement comes from (seed file and section, or paper), what it states, and
how to check it. Its check compares a theoretical prediction with a value measured from the
project's own implementation and returns :class:`Evidence`. Its falsifier is the *same* check run
on a deliberately wrong variant (the check function called with the falsifier's keyword
arguments); a falsifier is *caught* when that run's verdict is ``failed``. A check that cannot fail
is a defect, so every claim that can fail has a falsifier and the registry records whether it was
caught.

Claims register themselves by living in a topic package ``transformer_math/claims/<topic>/``
and using the :func:`claim` decorator (the id's prefix must be the package: enforced);
:func:`all_claims` imports every module of every topic package (see ARCHITECTURE.md, layer 7).
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import re
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

import torch

from transformer_math.registry import Registry

T = TypeVar("T")


class Verdict(StrEnum):
    """Outcome of one check (CLAIMS.md, "Rules for every entry")."""

    VERIFIED = "verified"  # the measurement agrees with the theory
    REFUTED = "refuted"  # the seed's statement is shown wrong; the correct one is measured
    FAILED = "failed"  # the implementation disagrees with theory: a bug, never hidden
    CITED = "cited"  # not checkable on a computer; primary source given


class Tier(StrEnum):
    QUICK = "quick"  # seconds; all quick claims together well under a minute
    FULL = "full"  # trains something; minutes


class Size(StrEnum):
    """How large an experiment runs: tests use ``tiny``, the CLI ``default``, users ``large``."""

    TINY = "tiny"
    DEFAULT = "default"
    LARGE = "large"


@dataclass(frozen=True)
class Series:
    """One curve (or set of bars) of a figure."""

    label: str
    x: list[float]
    y: list[float]
    kind: str = "line"  # "line" | "scatter" | "bar" | "step"
    style: str = ""  # matplotlib format string, e.g. "--", "o-"


@dataclass(frozen=True)
class Figure:
    """Data for one figure; the report draws it with matplotlib (Agg)."""

    title: str
    xlabel: str
    ylabel: str
    series: list[Series]
    logx: bool = False
    logy: bool = False
    hlines: list[tuple[float, str]] = field(default_factory=list)
    vlines: list[tuple[float, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "xlabel": self.xlabel,
            "ylabel": self.ylabel,
            "logx": self.logx,
            "logy": self.logy,
            "hlines": [list(h) for h in self.hlines],
            "vlines": [list(v) for v in self.vlines],
            "series": [
                {"label": s.label, "x": list(s.x), "y": list(s.y), "kind": s.kind, "style": s.style}
                for s in self.series
            ],
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Figure:
        return Figure(
            title=data["title"],
            xlabel=data["xlabel"],
            ylabel=data["ylabel"],
            logx=data.get("logx", False),
            logy=data.get("logy", False),
            hlines=[(float(h[0]), str(h[1])) for h in data.get("hlines", [])],
            vlines=[(float(v[0]), str(v[1])) for v in data.get("vlines", [])],
            series=[
                Series(s["label"], s["x"], s["y"], s.get("kind", "line"), s.get("style", ""))
                for s in data["series"]
            ],
        )


JSONValue = float | int | str | bool | None | list[Any] | dict[str, Any]

SENSES = (">=", "<=")


@dataclass(frozen=True)
class Margin:
    """One pass condition of a check, kept as numbers: ``value >= threshold`` (sense ``">="``) or
    ``value <= threshold`` (``"<="``).

    ``slack`` is the signed distance to the threshold in the units of ``value`` (positive: the
    condition holds). Sweeping seeds compares the slack with the spread of ``value`` between
    seeds (``claims/margins.py``): a verdict is only as firm as its smallest slack.
    """

    name: str
    value: float
    threshold: float
    sense: str = ">="

    def __post_init__(self) -> None:
        if self.sense not in SENSES:
            raise ValueError(f"margin sense must be one of {SENSES}, got {self.sense!r}")

    @property
    def slack(self) -> float:
        if not (math.isfinite(self.value) and math.isfinite(self.threshold)):
            return -math.inf
        d = self.value - self.threshold
        return d if self.sense == ">=" else self.threshold - self.value

    @property
    def holds(self) -> bool:
        return self.slack >= 0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "threshold": self.threshold,
                "sense": self.sense, "slack": self.slack}


def at_least(name: str, value: float, threshold: float) -> Margin:
    """The pass condition ``value >= threshold``."""
    return Margin(name, float(value), float(threshold), ">=")


def at_most(name: str, value: float, threshold: float) -> Margin:
    """The pass condition ``value <= threshold``."""
    return Margin(name, float(value), float(threshold), "<=")


def close_to(name: str, measured: float, predicted: float, *, rel: float = 0.0,
             abs_: float = 0.0) -> Margin:
    """:func:`within` as a margin: ``|measured - predicted| <= max(abs_, rel |predicted|)``."""
    err = abs(float(measured) - float(predicted))
    if not (math.isfinite(float(measured)) and math.isfinite(float(predicted))):
        err = math.inf
    return Margin(name, err, max(abs_, rel * abs(float(predicted))), "<=")


def all_hold(margins: Iterable[Margin]) -> bool:
    """True when every margin's condition holds (and there is at least one)."""
    margins = list(margins)
    return bool(margins) and all(m.holds for m in margins)


@dataclass
class Evidence:
    """What a check found: prediction, measurement, tolerance, verdict, notes, figures.

    ``predicted`` and ``measured`` are JSON values (numbers, strings or short lists) shown in the
    table; ``details`` holds any further numbers a reader may want (``tmath show ID``);
    ``margins`` the pass conditions with their slack.
    """

    predicted: JSONValue
    measured: JSONValue
    tolerance: JSONValue
    verdict: Verdict
    notes: list[str] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    #: The pass conditions as numbers (:class:`Margin`); when given, the verdict is ``failed``
    #: exactly when one of them does not hold (``run_claim`` checks this).
    margins: list[Margin] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict is not Verdict.FAILED


def agreement(ok: bool, *, refutes_seed: bool = False) -> Verdict:
    """Verdict of a comparison: ``verified`` (or ``refuted`` for an audit claim) when ``ok``."""
    if not ok:
        return Verdict.FAILED
    return Verdict.REFUTED if refutes_seed else Verdict.VERIFIED


def within(measured: float, predicted: float, *, rel: float = 0.0, abs_: float = 0.0) -> bool:
    """``|measured - predicted| <= max(abs_, rel * |predicted|)``; NaN never agrees."""
    if not (math.isfinite(measured) and math.isfinite(predicted)):
        return False
    return abs(measured - predicted) <= max(abs_, rel * abs(predicted))


@dataclass(frozen=True)
class Context:
    """What every check receives: a seed, the size of experiments, and a progress callback."""

    seed: int = 0
    size: Size = Size.DEFAULT
    progress: Callable[[float], None] | None = None

    def generator(self, offset: int = 0) -> torch.Generator:
        """A fresh CPU generator seeded by ``seed + offset`` (no global RNG state is used)."""
        g = torch.Generator()
        g.manual_seed(self.seed + offset)
        return g

    def pick(self, tiny: T, default: T, large: T) -> T:
        """The value for this context's size."""
        return {Size.TINY: tiny, Size.DEFAULT: default, Size.LARGE: large}[self.size]

    def preset(self, config_cls: Any) -> Any:
        """The preset constructor of an experiment config for this size: ``Config.tiny``,
        ``Config.default`` or ``Config.large``."""
        return getattr(config_cls, self.size.value)

    def report_progress(self, fraction: float) -> None:
        if self.progress is not None:
            self.progress(min(max(fraction, 0.0), 1.0))


CheckFn = Callable[..., Evidence]


@dataclass(frozen=True)
class Falsifier:
    """A deliberately wrong variant: the claim's own check called with ``kwargs``."""

    name: str
    kwargs: dict[str, Any]
    description: str = ""


@dataclass(frozen=True)
class Claim:
    id: str
    topic: str
    source: str
    statement: str
    tier: Tier
    check: CheckFn
    falsifier: Falsifier | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z]+\.[a-z0-9-]+", self.id):
            raise ValueError(f"claim id must look like 'topic.slug', got {self.id!r}")
        if self.id.split(".")[0] != self.topic:
            raise ValueError(f"claim id {self.id!r} does not start with its topic {self.topic!r}")


CLAIMS: Registry[Claim] = Registry("claim")
"""Every claim by id; metadata ``topic`` and ``tier``. Filled by importing the topic packages."""

_PACKAGE = "transformer_math.claims"


def topic_of_module(module: str) -> str:
    """The topic a module's claims belong to: its package under ``transformer_math.claims``.

    ``transformer_math.claims.attention.scaling`` -> ``attention`` (a topic is a package or a
    module directly under ``claims``; claims defined anywhere else have no topic).
    """
    prefix = _PACKAGE + "."
    if not module.startswith(prefix) or module[len(prefix):].split(".")[0] in _NOT_TOPICS:
        raise ValueError(f"claims live in a topic package under {_PACKAGE}; "
                         f"{module!r} is not one")
    return module[len(prefix):].split(".")[0]


def claim(
    id: str,
    *,
    source: str,
    statement: str,
    tier: Tier | str = Tier.QUICK,
    falsifier: Falsifier | None = None,
) -> Callable[[CheckFn], CheckFn]:
    """Register the decorated function ``check(ctx, **variant) -> Evidence`` as a claim."""

    def register(fn: CheckFn) -> CheckFn:
        topic = id.split(".")[0]
        if fn.__module__.startswith(_PACKAGE + ".") and topic_of_module(fn.__module__) != topic:
            raise ValueError(f"claim {id!r} is defined in {fn.__module__}, outside its topic "
                             f"package {_PACKAGE}.{topic}")
        c = Claim(
            id=id,
            topic=topic,
            source=source,
            statement=" ".join(statement.split()),
            tier=Tier(tier),
            check=fn,
            falsifier=falsifier,
        )
        if id in CLAIMS and CLAIMS[id].check is fn:
            return fn
        if id in CLAIMS:
            raise ValueError(f"claim {id!r} registered twice")
        CLAIMS.add(id, c, topic=c.topic, tier=c.tier.value)
        return fn

    return register


_NOT_TOPICS = frozenset({"registry", "margins"})  # the machinery, not claims


def _import_topic_modules() -> None:
    """Import every module of every topic package (claims are found by where they live)."""
    from transformer_math import claims as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name in _NOT_TOPICS or info.name.startswith("_"):
            continue
        topic = importlib.import_module(f"{package.__name__}.{info.name}")
        if info.ispkg:
            for sub in pkgutil.walk_packages(topic.__path__, prefix=f"{topic.__name__}."):
                if not sub.name.rsplit(".", 1)[-1].startswith("_"):
                    importlib.import_module(sub.name)


def all_claims() -> list[Claim]:
    """Every registered claim, sorted by id (topic modules are imported on first call)."""
    _import_topic_modules()
    return sorted(CLAIMS.values(), key=lambda c: c.id)


def get_claim(claim_id: str) -> Claim:
    claims = {c.id: c for c in all_claims()}
    if claim_id not in claims:
        close = [c for c in claims if claim_id in c]
        hint = f"; did you mean {', '.join(close[:5])}?" if close else ""
        raise KeyError(f"no claim with id {claim_id!r}{hint}")
    return claims[claim_id]


def select_claims(
    claims: Iterable[Claim], *, tier: Tier | str | None = None, pattern: str | None = None
) -> list[Claim]:
    """Filter by tier (``quick`` selects quick only, ``full`` selects all) and substring/regex."""
    out = list(claims)
    if tier is not None and Tier(tier) is Tier.QUICK:
        out = [c for c in out if c.tier is Tier.QUICK]
    if pattern:
        rx = re.compile(pattern)
        out = [c for c in out if rx.search(c.id) or rx.search(c.topic)]
    return out


@dataclass
class ClaimResult:
    """A claim's evidence, its falsifier's evidence, and whether the falsifier was caught."""

    claim: Claim
    evidence: Evidence
    seconds: float
    falsifier_evidence: Evidence | None = None
    falsifier_caught: bool | None = None
    error: str | None = None

    @property
    def problem(self) -> bool:
        """True when the run should make ``tmath verify`` exit 1."""
        return self.evidence.verdict is Verdict.FAILED or self.falsifier_caught is False

    def to_json(self) -> dict[str, Any]:
        c, e = self.claim, self.evidence
        falsifier = None
        if c.falsifier is not None:
            falsifier = {
                "name": c.falsifier.name,
                "description": c.falsifier.description,
                "caught": self.falsifier_caught,
                "verdict": self.falsifier_evidence.verdict.value
                if self.falsifier_evidence
                else None,
                "measured": self.falsifier_evidence.measured if self.falsifier_evidence else None,
            }
        return {
            "id": c.id,
            "topic": c.topic,
            "source": c.source,
            "statement": c.statement,
            "tier": c.tier.value,
            "verdict": e.verdict.value,
            "predicted": e.predicted,
            "measured": e.measured,
            "tolerance": e.tolerance,
            "falsifier": falsifier,
            "seconds": round(self.seconds, 4),
            "notes": list(e.notes),
            "details": e.details,
            "figures": [f.to_json() for f in e.figures],
            "margins": [m.to_json() for m in e.margins],
            "error": self.error,
        }


def _run_check(fn: CheckFn, ctx: Context, kwargs: dict[str, Any]) -> tuple[Evidence, str | None]:
    try:
        evidence = fn(ctx, **kwargs)
    except Exception as exc:  # a crashing check is a failed claim, reported with its traceback
        tb = traceback.format_exc(limit=6)
        return (
            Evidence(
                predicted=None,
                measured=f"error: {type(exc).__name__}: {exc}",
                tolerance=None,
                verdict=Verdict.FAILED,
                notes=[tb],
            ),
            f"{type(exc).__name__}: {exc}",
        )
    if not isinstance(evidence, Evidence):
        raise TypeError(f"check of a claim must return Evidence, got {type(evidence).__name__}")
    if evidence.margins and evidence.verdict is not Verdict.CITED:
        failed = evidence.verdict is Verdict.FAILED
        if failed == all_hold(evidence.margins):
            broken = [m.name for m in evidence.margins if not m.holds]
            message = (f"verdict {evidence.verdict.value!r} disagrees with the margins "
                       f"(not holding: {broken})")
            evidence.verdict = Verdict.FAILED
            evidence.notes.append(message)
            return evidence, message
    return evidence, None


def run_claim(c: Claim, ctx: Context) -> ClaimResult:
    """Run a claim's check, then its falsifier (the same check on the wrong variant)."""
    start = time.perf_counter()
    evidence, error = _run_check(c.check, ctx, {})
    result = ClaimResult(claim=c, evidence=evidence, seconds=0.0, error=error)
    if c.falsifier is not None:
        f_evidence, f_error = _run_check(c.check, ctx, dict(c.falsifier.kwargs))
        result.falsifier_evidence = f_evidence
        # Caught means the check itself detected the wrong variant, not that it crashed.
        result.falsifier_caught = f_evidence.verdict is Verdict.FAILED and f_error is None
        if f_error is not None:
            evidence.notes.append(f"falsifier crashed instead of being detected: {f_error}")
    result.seconds = time.perf_counter() - start
    return result


def summarize(results: Iterable[ClaimResult]) -> dict[str, Any]:
    results = list(results)
    counts = {v.value: 0 for v in Verdict}
    for r in results:
        counts[r.evidence.verdict.value] += 1
    with_falsifier = [r for r in results if r.falsifier_caught is not None]
    return {
        "total": len(results),
        **counts,
        "falsifiers": len(with_falsifier),
        "falsifiers_caught": sum(1 for r in with_falsifier if r.falsifier_caught),
        "problems": sum(1 for r in results if r.problem),
        "seconds": round(sum(r.seconds for r in results), 3),
    }
