"""Planted bugs: the falsifiers of the claims and the zoo that ``tmath mutants`` runs.

A claim is only as trustworthy as its ability to fail. Each falsifier is a *real* bug in the
library code a claim exercises: a wrong scale in the attention function, a dropped rescale in the
online softmax, a wrong ALiBi slope table. The bug lives next to the correct code, behind a
named switch that is off unless a caller plants it::

    SCALE_BY_DK = declare_bug("attention.scale-by-dk", "divide the logits by d_k ...")

    def default_scale(d_k):
        if planted(SCALE_BY_DK):
            return 1.0 / d_k  # the bug
        return d_k ** -0.5

and a claim (or ``tmath mutants``) runs its unchanged check inside ``with plant(name):``. Nothing
about the prediction, the data or the measured numbers changes; only the library misbehaves.

While nothing is planted, :func:`planted` is one membership test of an empty set. Inside
:func:`recording` every switch a computation *queries* is recorded, so the bugs a claim can reach
are known without guessing: ``tmath mutants`` runs each bug only against the claims whose code
path passes a site where that bug lives (``experiments.memo`` replays the record of a memoised
run, so a cached result reports the sites its computation passed).

The zoo follows the bug classes that have hit real engines (issue 14): 1/d_k scaling, top-left
causal alignment with a KV cache, GQA heads tiled instead of grouped, RoPE layouts mixed up,
YaRN's attention factor dropped, masks of -1e9 instead of -inf, online softmax without its
rescale, Pre-LN placed as Post-LN, 2ND instead of 6ND, ...
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from transformer_math.registry import Registry


@dataclass(frozen=True)
class Bug:
    """One planted bug: where it lives and what it gets wrong.

    ``name`` is ``"<area>.<slug>"``; ``module`` the library module holding the site(s);
    ``description`` what the wrong code does; ``seen_in`` (optional) where this class of bug has
    been reported (an engine, an issue, a paper) or why it is plausible.
    """

    name: str
    module: str
    description: str
    seen_in: str = ""
    #: a test that kills this bug (``"tests/path.py::test_name"``) where no claim can: the
    #: implementation checks moved out of the catalogue (issue 31) still kill their bugs
    test: str = ""


BUGS: Registry[Bug] = Registry("bug")
"""Every declared bug by name (filled when the library modules holding the sites are imported)."""

_ACTIVE: frozenset[str] = frozenset()
_RECORDS: list[set[str]] = []


def declare_bug(name: str, description: str, *, module: str, seen_in: str = "",
                test: str = "") -> str:
    """Register a bug whose site lives in ``module`` and return its name (use it as the switch).

    ``test`` names the test that kills it (``"tests/x.py::test_y"``, which plants it) when it is
    killed by a test of the implementation rather than by a claim. Declaring the same name twice
    from the same module (a module reload) is a no-op.
    """
    if test and "::" not in test:
        raise ValueError(f"bug {name!r}: test must look like 'tests/path.py::test_name'")
    if name.count(".") < 1 or name != name.strip() or " " in name:
        raise ValueError(f"bug name must look like 'area.slug', got {name!r}")
    if name in BUGS:
        if BUGS[name].module == module:
            return name
        raise ValueError(f"bug {name!r} declared in {BUGS[name].module} and again in {module}")
    BUGS.add(name, Bug(name, module, " ".join(description.split()), seen_in, test),
             module=module)
    return name


def planted(name: str) -> bool:
    """Whether the bug ``name`` is planted now (called at the bug's site in library code)."""
    if _RECORDS:
        _RECORDS[-1].add(name)
    return name in _ACTIVE


def active() -> frozenset[str]:
    """The names of the bugs planted now (empty in normal use)."""
    return _ACTIVE


def load_all() -> Registry[Bug]:
    """Import every library module so that every bug is declared; return :data:`BUGS`."""
    import importlib
    import pkgutil

    import transformer_math as package

    skip = ("transformer_math.cli", "transformer_math.commands", "transformer_math.report")
    for info in pkgutil.walk_packages(package.__path__, prefix="transformer_math."):
        if not info.name.startswith(skip):
            importlib.import_module(info.name)
    return BUGS


@contextmanager
def plant(*names: str) -> Iterator[None]:
    """Plant the named bugs for the duration of the block (nested blocks add to the set)."""
    global _ACTIVE
    unknown = [n for n in names if n not in BUGS]
    if unknown:
        load_all()
        unknown = [n for n in names if n not in BUGS]
    if unknown:
        raise ValueError(f"unknown bug(s) {unknown}; known: {', '.join(sorted(BUGS))}")
    before = _ACTIVE
    _ACTIVE = before | frozenset(names)
    try:
        yield
    finally:
        _ACTIVE = before


@contextmanager
def recording() -> Iterator[set[str]]:
    """Record the names of every bug site queried inside the block (nested records merge up)."""
    record: set[str] = set()
    _RECORDS.append(record)
    try:
        yield record
    finally:
        _RECORDS.pop()
        if _RECORDS:
            _RECORDS[-1].update(record)


def note_reached(names: set[str] | frozenset[str]) -> None:
    """Add ``names`` to the current record, as if their sites had been queried (memo replay)."""
    if _RECORDS:
        _RECORDS[-1].update(names)
