"""The claim registry: every checkable statement of the seeds, with its check and its falsifier.

A claim says where a statement comes from (seed file and lines, or paper), what it states, and how
to check it. Its check compares a theoretical prediction with a value measured from the
project's own implementation and returns :class:`Evidence` whose pass conditions are
:class:`Margin` s. The verdict follows from them (:func:`decide`):

- ``failed`` when a pass condition of the correct statement does not hold;
- ``refuted`` when they all hold *and* the seed's own version of the statement, computed by the
  same check (``Evidence.seed_margins``), does not: a refutation is measured, never a literal;
- ``verified`` otherwise.

Each claim declares the verdict it ``expected`` and a ``version`` (bumped when its estimator or
thresholds change); obtaining another verdict is a problem. Its falsifier names a bug planted
in the library (:mod:`transformer_math.bugs`): the *same* check is run with that bug planted and
the falsifier is *caught* when that run's verdict is ``failed`` (a crash is not a catch).

Claims register themselves by living in a topic package ``transformer_math/claims/<topic>/``
and using the :func:`claim` decorator (the id's prefix must be the package: enforced);
:func:`all_claims` imports every module of every topic package (see ARCHITECTURE.md, layer 7).
"""

from __future__ import annotations

import dataclasses
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

from transformer_math import bugs, chapters
from transformer_math.claims import counts
from transformer_math.i18n.message import with_messages
from transformer_math.registry import Registry

T = TypeVar("T")


class Verdict(StrEnum):
    """Outcome of one check (CLAIMS.md, "Rules for every entry")."""

    VERIFIED = "verified"  # the measurement agrees with the theory
    REFUTED = "refuted"  # the seed's statement is shown wrong; the correct one is measured
    FAILED = "failed"  # the implementation disagrees with theory: a bug, never hidden
    CITED = "cited"  # not checkable on a computer; primary source given
    #: the measurement ran, but this size (or number of seeds) cannot decide the seed's
    #: statement; the notes say what size would (issue 31). ``tmath verify`` does not fail on it.
    INCONCLUSIVE = "inconclusive"


class Kind(StrEnum):
    """What a claim's evidence is (issue 31, item 2); shown beside every verdict.

    - ``measurement``: a prediction derived independently is compared with a value measured on
      library code a user runs (the attention, the Transformer, the RoPE module, a trained
      model); its falsifier is a bug in that code (a test enforces it from the import graph);
    - ``construction``: a hand-built network or circuit shows that something is possible; its
      falsifier may sit in the construction;
    - ``code-audit``: the seed's own code or arithmetic, run or recomputed;
    - ``model``: a conclusion from an analytic model (the roofline latency, an inference-aware
      Chinchilla): its verdict is the model's, never a measurement's;
    - ``cited``: not checkable on a computer; primary sources given.
    """

    MEASUREMENT = "measurement"
    CONSTRUCTION = "construction"
    CODE_AUDIT = "code-audit"
    MODEL = "model"
    CITED = "cited"


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
    #: > 0: the value is the worst case over this many seeds' values (``PerSeed.at_least`` /
    #: ``at_most``), so the condition failing on some of the seeds fails on all of them
    worst_of_seeds: int = 0
    #: The quantity itself when ``value`` is derived from it (issue 38.3): :func:`close_to`
    #: tests the deviation ``|measured - predicted|``, :func:`exceeds` ``log10 measured``. Both
    #: None when ``value`` is the measured quantity (:func:`at_least`, :func:`at_most`).
    predicted: float | None = None
    measured: float | None = None
    #: the left-hand side of the inequality in words (``"|measured - predicted|"``); empty:
    #: the value itself
    tested: str = ""
    #: the right-hand side in words (``"0.05 |predicted|"``); empty: the threshold itself
    bound: str = ""

    def __post_init__(self) -> None:
        if self.sense not in SENSES:
            raise ValueError(f"margin sense must be one of {SENSES}, got {self.sense!r}")

    @property
    def test(self) -> str:
        """The inequality tested, e.g. ``"|measured - predicted| <= 0.05 |predicted|"``."""
        bound = self.bound or format(self.threshold, "g")
        return f"{self.tested or 'measured'} {self.sense} {bound}"

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
                "sense": self.sense, "slack": self.slack, "predicted": self.predicted,
                "measured": self.value if self.measured is None and not self.tested
                else self.measured, "test": self.test}


def at_least(name: str, value: float, threshold: float) -> Margin:
    """The pass condition ``value >= threshold``."""
    return Margin(name, float(value), float(threshold), ">=")


def at_most(name: str, value: float, threshold: float) -> Margin:
    """The pass condition ``value <= threshold``."""
    return Margin(name, float(value), float(threshold), "<=")


def exceeds(name: str, value: float, floor: float) -> Margin:
    """``value >= floor`` for a quantity that must merely be non-negligible (a change, a
    distance, a gap above rounding), compared in decades: ``log10 value >= log10 floor``.

    Such a value is a random magnitude whose spread between seeds is of the order of the value
    itself; in decades the slack says how many orders of magnitude the value clears the floor
    by, which is what the condition is about.
    """
    if not floor > 0:
        raise ValueError(f"floor must be > 0, got {floor}")
    v = float(value)
    logged = math.log10(v) if v > 0 and math.isfinite(v) else (math.inf if v == math.inf
                                                                 else -math.inf)
    return Margin(f"log10 {name}", logged, math.log10(floor), ">=", measured=v,
                  tested="log10 measured", bound=f"log10 {floor:g}")


def close_to(name: str, measured: float, predicted: float, *, rel: float = 0.0,
             abs_: float = 0.0) -> Margin:
    """:func:`within` as a margin: ``|measured - predicted| <= max(abs_, rel |predicted|)``.

    The margin's ``value`` is the deviation; ``predicted`` and ``measured`` keep the quantity
    itself, so that a table shows ``Var(q.k)`` as 15.98 against 16, not as its deviation."""
    err = abs(float(measured) - float(predicted))
    if not (math.isfinite(float(measured)) and math.isfinite(float(predicted))):
        err = math.inf
    by_rel = rel * abs(float(predicted))
    bound = f"{rel:g} |predicted|" if by_rel >= abs_ and rel > 0 else f"{abs_:g}"
    return Margin(name, err, max(abs_, by_rel), "<=", predicted=float(predicted),
                  measured=float(measured), tested="|measured - predicted|", bound=bound)


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
    #: The seed's own version of the statement, as pass conditions on the same measurement. A
    #: claim is ``refuted`` exactly when every margin holds and one of these does not.
    seed_margins: list[Margin] = field(default_factory=list)
    #: For claims that run several seeds: ``{"seeds": [...], "values": {name: [...]}, "mean":
    #: {...}, "spread": {...}}`` (see ``claims/seeds.py``).
    per_seed: dict[str, Any] | None = None
    #: What this run must reach for its measurement to decide the statement (a size, a number
    #: of seeds, a range that reaches the limit an asymptotic statement is about). When the
    #: margins hold and one of these does not, the verdict is ``inconclusive`` (issue 31).
    decisive: list[Margin] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict is not Verdict.FAILED


def agreement(ok: bool) -> Verdict:
    """Verdict of a comparison without a seed version: ``verified`` when ``ok``, else ``failed``."""
    return Verdict.VERIFIED if ok else Verdict.FAILED


def decide(margins: Iterable[Margin], seed_margins: Iterable[Margin] = (),
           decisive: Iterable[Margin] = ()) -> Verdict:
    """The verdict the pass conditions imply.

    ``failed`` unless every margin of the correct statement holds; then ``inconclusive`` when
    one of the ``decisive`` conditions (this size can decide the statement) does not hold; then
    ``refuted`` when the seed's version (``seed_margins``, computed from the same measurement)
    fails somewhere, and ``verified`` when it holds too or there is none.
    """
    if not all_hold(margins):
        return Verdict.FAILED
    if not all(m.holds for m in decisive):
        return Verdict.INCONCLUSIVE
    seed_margins = list(seed_margins)
    if seed_margins and not all(m.holds for m in seed_margins):
        return Verdict.REFUTED
    return Verdict.VERIFIED


def within(measured: float, predicted: float, *, rel: float = 0.0, abs_: float = 0.0) -> bool:
    """``|measured - predicted| <= max(abs_, rel * |predicted|)``; NaN never agrees."""
    if not (math.isfinite(measured) and math.isfinite(predicted)):
        return False
    return abs(measured - predicted) <= max(abs_, rel * abs(predicted))


DEFAULT_SEEDS = 3  # training claims run seeds seed, seed + 1, ..., seed + seeds - 1 (issue 14)


@dataclass(frozen=True)
class Context:
    """What every check receives: a seed, how many seeds a training claim runs, the size of
    experiments, and a progress callback."""

    seed: int = 0
    size: Size = Size.DEFAULT
    progress: Callable[[float], None] | None = None
    seeds: int = DEFAULT_SEEDS
    #: How ``claims.seeds.over_seeds`` treats the seeds (a ``SeedHook``: one seed alone, seeds
    #: computed elsewhere, a callback per seed); None: compute every seed here.
    seed_hook: Any = None

    def __post_init__(self) -> None:
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 1:
            raise ValueError(f"seeds must be a positive integer, got {self.seeds!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")

    def seed_values(self) -> list[int]:
        """The seeds a training claim runs: ``seed, seed + 1, ..., seed + seeds - 1``."""
        return [self.seed + i for i in range(self.seeds)]

    def with_seed(self, seed: int) -> Context:
        """This context for one seed of a sweep (progress is left to the sweep)."""
        return Context(seed=seed, size=self.size, progress=None, seeds=1)

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


CheckFn = Callable[["Context"], Evidence]


@dataclass(frozen=True)
class Falsifier:
    """A bug planted in the library (:mod:`transformer_math.bugs`) that the check must catch."""

    bug: str
    description: str = ""

    @property
    def name(self) -> str:
        return self.bug

    def describe(self) -> str:
        """The description given here, else the bug's own."""
        if self.description:
            return self.description
        known = bugs.BUGS.get(self.bug)
        return known.description if known is not None else ""


SEED_FILES = {"000": "000", "003": "003", "004": "004"}  # the seed documents, by prefix


@dataclass(frozen=True)
class SeedRef:
    """Lines ``start..end`` (1-based, inclusive) of seed document ``seed`` that a claim checks."""

    seed: str
    lines: tuple[int, int]

    def __post_init__(self) -> None:
        if self.seed not in SEED_FILES:
            raise ValueError(f"seed must be one of {sorted(SEED_FILES)}, got {self.seed!r}")
        start, end = self.lines
        if not (isinstance(start, int) and isinstance(end, int) and 1 <= start <= end):
            raise ValueError(f"seed lines must be 1 <= start <= end, got {self.lines!r}")

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "lines": list(self.lines)}


def _normalise_also(seed: str, also: Iterable[Any]) -> tuple[tuple[str, int], ...]:
    out: list[tuple[str, int]] = []
    for item in also:
        other, line = (seed, item) if isinstance(item, int) else tuple(item)
        if other not in SEED_FILES:
            raise ValueError(f"also: seed must be one of {sorted(SEED_FILES)}, got {other!r}")
        if isinstance(line, bool) or not isinstance(line, int) or line < 1:
            raise ValueError(f"also: line must be a positive integer, got {line!r}")
        out.append((other, line))
    return tuple(out)


@dataclass(frozen=True)
class Refutation:
    """One distinct error of a seed that a ``refuted`` claim shows wrong, and the correct
    statement (issue 31, item 3).

    - ``line`` (to ``to_line``): where the error is quoted; ``quote`` is the seed's words there,
      verbatim (a test checks it against the seed file, whitespace aside);
    - ``also``: every other place the same error appears (line numbers of the same seed, or
      ``(seed, line)``); the error is counted once however many lines repeat it;
    - ``says``: the English gloss of the quote; ``reading``: the reading of it that the seed
      margins test (with the seed's own qualifiers: an asymptotic statement in the limit, an
      "approximately" with a band); ``correct``: what is measured instead.
    """

    seed: str
    line: int
    says: str
    correct: str
    quote: str = ""
    also: tuple[Any, ...] = ()
    reading: str = ""
    to_line: int = 0

    def __post_init__(self) -> None:
        if self.seed not in SEED_FILES:
            raise ValueError(f"seed must be one of {sorted(SEED_FILES)}, got {self.seed!r}")
        if isinstance(self.line, bool) or not isinstance(self.line, int) or self.line < 1:
            raise ValueError(f"line must be a positive integer, got {self.line!r}")
        end = self.to_line or self.line
        if not isinstance(end, int) or end < self.line:
            raise ValueError(f"to_line must be >= line {self.line}, got {self.to_line!r}")
        object.__setattr__(self, "to_line", end)
        object.__setattr__(self, "also", _normalise_also(self.seed, self.also))

    @property
    def lines(self) -> tuple[tuple[str, int], ...]:
        """Every place of the error: the quoted line first, then ``also``."""
        return ((self.seed, self.line), *self.also)

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "line": self.line, "to_line": self.to_line,
                "quote": self.quote, "says": self.says, "reading": self.reading,
                "correct": self.correct, "also": [list(a) for a in self.also]}


@dataclass(frozen=True)
class Correction:
    """A seed statement a primary source contradicts, reported as *cited*, not measured: a wrong
    author, venue, year, arXiv number or affiliation, or a paper described as saying what it does
    not. ``source`` names where the correct version is found (paper, section, equation).

    A correction never makes a verdict ``refuted``: only a measurement does (:class:`Refutation`).
    """

    seed: str
    line: int
    says: str
    correct: str
    source: str

    def __post_init__(self) -> None:
        if self.seed not in SEED_FILES:
            raise ValueError(f"seed must be one of {sorted(SEED_FILES)}, got {self.seed!r}")
        if not isinstance(self.line, int) or self.line < 1:
            raise ValueError(f"line must be a positive integer, got {self.line!r}")
        for name in ("says", "correct", "source"):
            if not str(getattr(self, name)).strip():
                raise ValueError(f"correction at {self.seed}:{self.line}: {name} must not be empty")

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "line": self.line, "says": self.says, "correct": self.correct,
                "source": self.source}


@dataclass(frozen=True)
class Claim:
    id: str
    topic: str
    source: str
    statement: str
    tier: Tier
    check: CheckFn
    falsifier: Falsifier | None = None
    expected: Verdict | None = None
    version: int = 1
    seed_refs: tuple[SeedRef, ...] = ()
    refutes: tuple[Refutation, ...] = ()
    corrections: tuple[Correction, ...] = ()
    #: the statement in Chinese (else the catalog ``transformer_math.i18n`` is asked)
    statement_zh: str = ""
    #: what the evidence is (:class:`Kind`); every claim declares it (a test checks)
    kind: Kind | None = None
    #: the notes of issue 31's review answered here: why a threshold is what it is, what was
    #: disputed; shown by ``tmath show`` and the report
    audit: str = ""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z]+\.[a-z0-9-]+", self.id):
            raise ValueError(f"claim id must look like 'topic.slug', got {self.id!r}")
        if self.id.split(".")[0] != self.topic:
            raise ValueError(f"claim id {self.id!r} does not start with its topic {self.topic!r}")
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
            raise ValueError(f"claim {self.id!r}: version must be a positive integer")
        if self.expected is Verdict.REFUTED and not self.refutes:
            raise ValueError(f"claim {self.id!r} expects 'refuted' but names no refuted "
                             "statement (refutes=...)")
        if self.refutes and self.expected is not Verdict.REFUTED:
            raise ValueError(f"claim {self.id!r} lists refuted statements but expects "
                             f"{self.expected}")
        if self.expected is Verdict.FAILED:
            raise ValueError(f"claim {self.id!r}: a claim never expects 'failed'")
        if (self.kind is Kind.CITED) != (self.expected is Verdict.CITED) and self.kind:
            raise ValueError(f"claim {self.id!r}: kind 'cited' goes with expected 'cited' "
                             f"(got kind {self.kind}, expected {self.expected})")

    def claim_expected(self) -> str | None:
        return self.expected.value if self.expected is not None else None

    @property
    def seeded(self) -> bool:
        """Whether the check sweeps seeds through ``claims.seeds.over_seeds`` (read from the
        names its code calls, through decorators): an executor then runs its seeds as separate
        tasks (:mod:`transformer_math.execution`). ``tests/claims`` checks that every claim
        reporting ``per_seed`` is seeded."""
        import inspect

        return "over_seeds" in inspect.unwrap(self.check).__code__.co_names

    @property
    def sections(self) -> tuple[str, ...]:
        """The seed sections (``transformer_math.chapters``) its seed lines fall in, in the order
        of ``seed_refs``, without repeats (``"8.3.3"``, ``"004.ch9"``, ...)."""
        keys: list[str] = []
        for r in self.seed_refs:
            s = chapters.section_of(r.seed, r.lines[0])
            if s is not None and s.key not in keys:
                keys.append(s.key)
        return tuple(keys)

    @property
    def section(self) -> str | None:
        """The section the claim is read in: the first of :attr:`sections` (None without any)."""
        return self.sections[0] if self.sections else None

    @property
    def module(self) -> str | None:
        """The chapter's project module (``"M1"``..``"M4"``, 000:1573-1587) this claim is."""
        for name, claim_id in chapters.PROJECT_MODULES.items():
            if claim_id == self.id:
                return name
        return None

    def search_fields(self) -> tuple[str, ...]:
        """What ``-k`` searches, each field on its own (so ``^`` and ``$`` anchor a field): id,
        topic, source, statement (both languages), the sections (``8.3.3`` and ``§8.3.3``) and
        the project module (``M2``)."""
        from transformer_math import i18n

        parts = [self.id, self.topic, self.source, self.statement, i18n.statement(self, "zh")]
        parts += [p for key in self.sections for p in (key, "§" + key)]
        if self.module:
            parts.append(self.module)
        return tuple(p for p in parts if p)


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
    falsifier: Falsifier | str | None = None,
    expected: Verdict | str | None = None,
    version: int = 1,
    seed_refs: Iterable[SeedRef | tuple[str, int, int]] = (),
    refutes: Iterable[Refutation] = (),
    corrections: Iterable[Correction] = (),
    statement_zh: str = "",
    kind: Kind | str | None = None,
    audit: str = "",
) -> Callable[[CheckFn], CheckFn]:
    """Register the decorated function ``check(ctx) -> Evidence`` as a claim.

    ``falsifier`` is a bug name (or :class:`Falsifier`); ``seed_refs`` items are
    :class:`SeedRef` or ``(seed, start, end)``; ``expected`` is the verdict the claim should
    obtain (``refuted`` requires ``refutes``); ``corrections`` are seed statements a primary
    source contradicts (cited, never a verdict); ``statement_zh`` the statement in Chinese.
    """
    if isinstance(falsifier, str):
        falsifier = Falsifier(falsifier)
    refs = tuple(r if isinstance(r, SeedRef) else SeedRef(r[0], (r[1], r[2])) for r in seed_refs)

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
            expected=Verdict(expected) if expected is not None else None,
            version=version,
            seed_refs=refs,
            refutes=tuple(refutes),
            corrections=tuple(corrections),
            statement_zh=" ".join(statement_zh.split()),
            kind=Kind(kind) if kind is not None else None,
            audit=" ".join(audit.split()),
        )
        if id in CLAIMS and CLAIMS[id].check is fn:
            return fn
        if id in CLAIMS:
            raise ValueError(f"claim {id!r} registered twice")
        CLAIMS.add(id, c, topic=c.topic, tier=c.tier.value)
        return fn

    return register


_NOT_TOPICS = frozenset({"registry", "margins", "seeds", "seed_hook", "mutants"})  # machinery


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
    """Filter by tier (``quick`` selects quick only, ``full`` selects all) and a regular
    expression searched, case-insensitively, in :meth:`Claim.search_fields` (id, topic, source,
    statement, sections, project module): ``8.3.3``, ``RoPE`` and ``M2`` find what a reader
    of the chapter expects."""
    out = list(claims)
    if tier is not None and Tier(tier) is Tier.QUICK:
        out = [c for c in out if c.tier is Tier.QUICK]
    if pattern:
        rx = re.compile(pattern, re.IGNORECASE)
        out = [c for c in out if any(rx.search(f) for f in c.search_fields())]
    return out


@dataclass
class ClaimResult:
    """A claim's evidence, its falsifier's evidence, and whether the falsifier was caught.

    ``reached`` holds the bug sites (:mod:`transformer_math.bugs`) the clean run passed: the
    bugs this claim can possibly catch.
    """

    claim: Claim
    evidence: Evidence
    seconds: float
    falsifier_evidence: Evidence | None = None
    falsifier_caught: bool | None = None
    error: str | None = None
    reached: frozenset[str] = frozenset()
    #: seconds per phase (``check_s``, ``falsifier_s``) and per seed (``check_seed_s``, ...)
    timing: dict[str, Any] = field(default_factory=dict)

    @property
    def expected_met(self) -> bool:
        """The verdict is the one the claim declares it expects (or it declares none)."""
        return self.claim.expected is None or self.evidence.verdict is self.claim.expected

    @property
    def problem(self) -> bool:
        """True when the run should make ``tmath verify`` exit 1: a failed verdict, a verdict
        other than the expected one, or a falsifier that was not caught."""
        undecided = Verdict.INCONCLUSIVE in (self.evidence.verdict, self.claim.expected)
        return (self.evidence.verdict is Verdict.FAILED or self.falsifier_caught is False
                or not (self.expected_met or undecided))

    def to_json(self) -> dict[str, Any]:
        c, e = self.claim, self.evidence
        falsifier = None
        if c.falsifier is not None:
            falsifier = {
                "name": c.falsifier.name,
                "bug": c.falsifier.bug,
                "description": c.falsifier.describe(),
                "caught": self.falsifier_caught,
                "verdict": self.falsifier_evidence.verdict.value
                if self.falsifier_evidence
                else None,
                "measured": self.falsifier_evidence.measured if self.falsifier_evidence else None,
                # the pass conditions that did not hold with the bug planted: why it was caught
                "failed_conditions": [m.to_json() for m in self.falsifier_evidence.margins
                                      if not m.holds] if self.falsifier_evidence else [],
            }
        # "messages": the id and arguments of every i18n message among the notes and figure
        # texts, so a report rendered later from the JSON translates them (i18n.revive)
        return with_messages({
            **claim_json(c),
            "verdict": e.verdict.value,
            "expected_met": self.expected_met,
            "predicted": e.predicted,
            "measured": e.measured,
            "tolerance": e.tolerance,
            "falsifier": falsifier,
            "seconds": round(self.seconds, 4),
            "timing": dict(self.timing),
            "notes": list(e.notes),
            "details": e.details,
            "figures": [f.to_json() for f in e.figures],
            "margins": [m.to_json() for m in e.margins],
            "seed_margins": [m.to_json() for m in e.seed_margins],
            "decisive": [m.to_json() for m in e.decisive],
            "per_seed": e.per_seed,
            "reached_bugs": sorted(self.reached),
            "error": self.error,
        })


def claim_json(c: Claim) -> dict[str, Any]:
    """What ``tmath list --json`` shows of a claim (and ``verify --json`` before the run)."""
    return {
        "id": c.id,
        "topic": c.topic,
        "source": c.source,
        "statement": c.statement,
        "tier": c.tier.value,
        "expected": c.expected.value if c.expected is not None else None,
        "version": c.version,
        "seed_refs": [r.to_json() for r in c.seed_refs],
        "refutes": [r.to_json() for r in c.refutes],
        "corrections": [r.to_json() for r in c.corrections],
        "statement_zh": c.statement_zh or None,
        "section": c.section,
        "sections": list(c.sections),
        "module": c.module,
        "falsifier_bug": c.falsifier.bug if c.falsifier is not None else None,
        "kind": c.kind.value if c.kind is not None else None,
        "audit": c.audit or None,
    }


def run_check(fn: CheckFn, ctx: Context) -> tuple[Evidence, str | None]:
    """Run one check; a crash or a verdict the margins do not imply is reported as ``failed``."""
    try:
        evidence = fn(ctx)
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
    message = _inconsistency(evidence)
    if message is not None:
        evidence.verdict = Verdict.FAILED
        evidence.notes.append(message)
        return evidence, message
    return evidence, None


def _inconsistency(evidence: Evidence) -> str | None:
    """Why the reported verdict is not the one the margins imply, or None."""
    if evidence.verdict is Verdict.CITED:
        return None
    if evidence.verdict is Verdict.REFUTED and not evidence.seed_margins:
        return ("verdict 'refuted' without the seed's version computed (seed_margins): a "
                "refutation must be measured, never a literal")
    if not evidence.margins:
        if evidence.verdict is Verdict.FAILED:
            return None
        return f"verdict {evidence.verdict.value!r} reported without any pass condition (margins)"
    implied = decide(evidence.margins, evidence.seed_margins, evidence.decisive)
    if implied is not evidence.verdict:
        broken = [m.name for m in evidence.margins if not m.holds]
        seed_broken = [m.name for m in evidence.seed_margins if not m.holds]
        undecided = [m.name for m in evidence.decisive if not m.holds]
        return (f"verdict {evidence.verdict.value!r} disagrees with the margins, which imply "
                f"{implied.value!r} (not holding: {broken}; seed's version not holding: "
                f"{seed_broken}; not decisive: {undecided})")
    return None


def run_falsifier(c: Claim, ctx: Context) -> tuple[Evidence, str | None]:
    """The claim's check with its falsifier's bug planted."""
    f = c.falsifier
    if f is None:
        raise ValueError(f"claim {c.id!r} has no falsifier")
    with bugs.plant(f.bug):
        return run_check(c.check, ctx)


def worst_seed_failure(evidence: Evidence) -> str | None:
    """The name of a failing margin that is the worst case over the seeds
    (``Margin.worst_of_seeds``) when the verdict is ``failed``, else None. Such a margin fails
    on every set of seeds that holds the ones it was computed on, so the verdict does too."""
    if evidence.verdict is not Verdict.FAILED:
        return None
    return next((m.name for m in evidence.margins if m.worst_of_seeds and not m.holds), None)


PHASES = ("check", "falsifier")
"""A claim runs twice: its ``check`` clean, then with its falsifier's bug planted."""


def run_claim(c: Claim, ctx: Context, *, falsifier: bool = True,
              seed_hook_for: Callable[[str], Any] | None = None) -> ClaimResult:
    """Run a claim's check, then its falsifier (the same check with the falsifier's bug).

    ``seed_hook_for(phase)`` gives each phase's ``claims.seed_hook.SeedHook`` (an executor's seeds
    computed elsewhere, :mod:`transformer_math.execution`); ``ClaimResult.timing`` holds each
    phase's seconds, seeds computed elsewhere included, and each seed's seconds.
    """
    start = time.perf_counter()
    timing: dict[str, Any] = {}

    def phase(name: str, hook: Any = None, base: Context = ctx, counted: float = 0.0
              ) -> tuple[Evidence, str | None]:
        if hook is None and seed_hook_for is not None:
            hook = seed_hook_for(name)
        pctx = base if hook is None else dataclasses.replace(base, seed_hook=hook)
        t0 = time.perf_counter()
        out = run_check(c.check, pctx) if name == "check" else run_falsifier(c, pctx)
        seconds = time.perf_counter() - t0
        if hook is not None and hook.used:
            seconds += sum(run.seconds for run, cached in hook.used if cached) - counted
            timing[f"{name}_seed_s"] = [round(run.seconds, 3) for run, _ in hook.used]
        timing[f"{name}_s"] = round(timing.get(f"{name}_s", 0.0) + seconds, 3)
        return out

    def falsifier_phase() -> tuple[Evidence, str | None]:
        """The falsifier, on the first seed alone when that already decides it.

        Every pass condition of a check must hold for the verdict to be other than ``failed``
        (:func:`decide`), and a margin marked ``worst_of_seeds`` is the worst of the seeds'
        values. If such a margin fails with the bug planted on the first seed, it fails on any
        set of seeds holding that one: the check over all ``ctx.seeds`` seeds is ``failed``
        too, and the other seeds' bugged runs need not be trained (issue 19). Otherwise the
        falsifier runs on every seed, the first one reused.
        """
        if not (c.seeded and ctx.seeds > 1):
            return phase("falsifier")
        from transformer_math.claims.seed_hook import SeedHook

        captured: dict[int, Any] = {}
        lead = (seed_hook_for("falsifier") if seed_hook_for is not None
                else SeedHook(on_seed=lambda run: captured.__setitem__(run.seed, run)))
        f_ev, f_err = phase("falsifier", lead, dataclasses.replace(ctx, seeds=1))
        deciding = worst_seed_failure(f_ev) if f_err is None else None
        if deciding is not None:
            f_ev.notes.append(
                f"falsifier decided on seed {ctx.seed} alone: {deciding!r} fails there and is "
                f"the worst case over seeds, so the check over all {ctx.seeds} seeds fails "
                "too; the other seeds' runs with the bug were not computed")
            return f_ev, f_err
        if seed_hook_for is not None:
            return phase("falsifier")
        return phase("falsifier", SeedHook(cached=captured),
                     counted=sum(run.seconds for run in captured.values()))

    with bugs.recording() as reached:
        evidence, error = phase("check")
    result = ClaimResult(claim=c, evidence=evidence, seconds=0.0, error=error,
                         reached=frozenset(reached), timing=timing)
    if not result.expected_met and error is None:
        evidence.notes.append(f"expected verdict {c.claim_expected()!r}, obtained "
                              f"{evidence.verdict.value!r}")
    if falsifier and c.falsifier is not None:
        f_evidence, f_error = falsifier_phase()
        result.falsifier_evidence = f_evidence
        # Caught means the check itself detected the wrong variant, not that it crashed.
        result.falsifier_caught = f_evidence.verdict is Verdict.FAILED and f_error is None
        if f_error is not None:
            evidence.notes.append(f"falsifier crashed instead of being detected: {f_error}")
        if c.falsifier.bug not in reached:
            evidence.notes.append(f"the clean run never passed the site of its falsifier's bug "
                                  f"{c.falsifier.bug!r}")
    result.seconds = sum(v for k, v in timing.items() if k in ("check_s", "falsifier_s"))
    if seed_hook_for is None:
        result.seconds = time.perf_counter() - start
    return result


def summarize(results: Iterable[ClaimResult]) -> dict[str, Any]:
    """The ``summary`` of a run: counts per verdict, per kind and verdict, distinct seed errors
    and falsifiers, all by the one definition of each in :mod:`transformer_math.claims.counts`."""
    results = list(results)
    entries = [count_entry(r) for r in results]
    return {
        "total": len(results),
        **counts.by_verdict(entries),
        "by_kind": counts.by_kind(entries),
        "distinct_errors": counts.distinct_errors(entries),
        **counts.falsifier_counts(entries),
        "problems": sum(1 for r in results if r.problem),
        "unexpected": sum(1 for r in results if not r.expected_met),
        "seconds": round(sum(r.seconds for r in results), 3),
    }


def count_entry(result: ClaimResult) -> dict[str, Any]:
    """The keys of a result that :mod:`transformer_math.claims.counts` reads (kind, verdict,
    refutation records, falsifier caught), without serialising the evidence."""
    c = result.claim
    return {"id": c.id, "section": c.section, "tier": c.tier.value,
            "kind": c.kind.value if c.kind is not None else None,
            "verdict": result.evidence.verdict.value,
            "refutes": [r.to_json() for r in c.refutes],
            "corrections": [r.to_json() for r in c.corrections],
            "falsifier": {"caught": result.falsifier_caught}}
