"""One definition of every count the project prints (issue 38, item 2).

The registry's ``summarize`` (the ``summary`` of ``tmath verify --json``), the report's cards and
its table by section, ``tmath chapters``, ``tmath list`` and the generated blocks of the README
all count through the functions here, so the same catalogue or the same run gives the same
numbers everywhere. Before this module the report's table by section counted the refutations of
``model`` claims among the errors shown by running code, and the cited corrections of the
claims *read* in a section rather than the corrections whose line lies there, so §8.3.3 read 29
in the report and 16 in ``tmath chapters`` for one catalogue.

Every function reads *entries*: the JSON form of a claim, as ``tmath list --json`` prints it
(:func:`transformer_math.claims.registry.claim_json`) or as a results document holds it (the
same keys and a ``verdict``). An entry's verdict is its ``verdict`` when it ran, else its
``expected`` verdict (a catalogue, nothing run). The definitions:

- a claim is counted once, by its verdict (:func:`by_verdict`) and by kind and verdict
  (:func:`by_kind`);
- a *distinct seed error* is one ``Refutation`` record of a claim whose verdict is ``refuted``,
  however many seed lines repeat it (issue 31, item 3). It is *measured* when the claim's kind
  is measurement, construction or code-audit (shown by running code) and *modelled* when it is
  ``model`` (the conclusion of an analytic model); ``lines`` is the number of distinct
  ``(seed, line)`` places the errors touch: each record's quoted line and its ``also`` lines
  (:func:`distinct_errors`);
- a section holds an error or a cited correction when the record's quoted line lies in it
  (``transformer_math.chapters.section_of``), whichever section the claim is read in; a
  section's claims are those read there (their ``section``) (:func:`section_row`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from transformer_math import chapters

VERDICTS = ("verified", "refuted", "failed", "cited", "inconclusive")
"""Every verdict, in the order the tables show them."""
KINDS = ("measurement", "construction", "code-audit", "model", "cited")
"""Every kind of evidence, in the order the tables show them."""
MODEL_KIND = "model"
"""The kind whose refutations are counted apart (``modelled``), not as shown by running code."""


def verdict_of(entry: Mapping[str, Any]) -> str:
    """The verdict a count uses: the one obtained, else the one expected (a catalogue entry)."""
    verdict = entry.get("verdict")
    if verdict is None:
        verdict = entry.get("expected")
    return str(verdict)


def kind_of(entry: Mapping[str, Any]) -> str:
    """The entry's kind of evidence, ``"undeclared"`` when it has none."""
    return str(entry.get("kind") or "undeclared")


def by_verdict(entries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many entries have each verdict (every verdict present, zeros included)."""
    counts = dict.fromkeys(VERDICTS, 0)
    for e in entries:
        verdict = verdict_of(e)
        counts[verdict] = counts.get(verdict, 0) + 1
    return counts


def by_kind(entries: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """``{kind: {verdict: n}}`` for the kinds and verdicts that occur."""
    table: dict[str, dict[str, int]] = {}
    for e in entries:
        row = table.setdefault(kind_of(e), {})
        row[verdict_of(e)] = row.get(verdict_of(e), 0) + 1
    return table


def by_tier(entries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many entries each tier holds (``quick``, ``full``)."""
    counts: dict[str, int] = {}
    for e in entries:
        tier = str(e.get("tier"))
        counts[tier] = counts.get(tier, 0) + 1
    return counts


def _records(entry: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [r for r in entry.get(key) or [] if isinstance(r, Mapping)]


def _places(record: Mapping[str, Any]) -> list[tuple[str, int]]:
    """The quoted line of a refutation record, then its ``also`` lines, as ``(seed, line)``."""
    seed = str(record.get("seed"))
    places = [(seed, record.get("line"))]
    for also in record.get("also") or []:
        if isinstance(also, Sequence) and not isinstance(also, str) and len(also) == 2:
            places.append((str(also[0]), also[1]))
        else:
            places.append((seed, also))
    return [(s, line) for s, line in places if isinstance(line, int)]


def errors(entries: Iterable[Mapping[str, Any]]) -> list[tuple[bool, Mapping[str, Any]]]:
    """Every distinct seed error of the entries: ``(modelled, record)`` for each refutation
    record of an entry whose verdict is ``refuted``."""
    return [(kind_of(e) == MODEL_KIND, r) for e in entries if verdict_of(e) == "refuted"
            for r in _records(e, "refutes")]


def distinct_errors(entries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``{"measured", "modelled", "lines"}``: the distinct seed errors shown by running code,
    those shown by an analytic model, and the distinct seed lines they touch."""
    found = errors(entries)
    return {"measured": sum(1 for modelled, _ in found if not modelled),
            "modelled": sum(1 for modelled, _ in found if modelled),
            "lines": len({p for _, r in found for p in _places(r)})}


def falsifier_counts(entries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``{"falsifiers", "falsifiers_caught"}`` of a run: falsifiers that ran (caught is
    ``True`` or ``False``) and those caught."""
    ran = [f for e in entries if isinstance(f := e.get("falsifier"), Mapping)
           and f.get("caught") is not None]
    return {"falsifiers": len(ran), "falsifiers_caught": sum(1 for f in ran if f.get("caught"))}


def in_section(record: Mapping[str, Any], section: chapters.Section | None) -> bool:
    """Whether a record's quoted line lies in ``section`` (``None``: in no section)."""
    line = record.get("line")
    found = (chapters.section_of(str(record.get("seed")), line) if isinstance(line, int)
             else None)
    if section is None:
        return found is None
    return found is not None and found.key == section.key


def section_row(entries: Sequence[Mapping[str, Any]],
                section: chapters.Section | None) -> dict[str, Any]:
    """The counts of one section (``None``: lines in no section): the claims read there, their
    verdicts, the distinct errors (measured, modelled) and cited corrections on its lines."""
    key = section.key if section is not None else None
    read = [e for e in entries if e.get("section") == key]
    found = [(m, r) for m, r in errors(entries) if in_section(r, section)]
    return {
        "claims": sorted(str(e.get("id")) for e in read),
        "by_verdict": by_verdict(read),
        "distinct_errors": sum(1 for modelled, _ in found if not modelled),
        "modelled_errors": sum(1 for modelled, _ in found if modelled),
        "corrections": sum(1 for e in entries for r in _records(e, "corrections")
                           if in_section(r, section)),
    }


def catalogue(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The counts of a catalogue (``tmath list --json``): claims by tier, kind, expected verdict
    and kind x verdict, the distinct seed errors, the cited corrections."""
    return {
        "total": len(entries),
        "by_tier": by_tier(entries),
        "kinds": {k: n for k in (*KINDS, "undeclared")
                  if (n := sum(1 for e in entries if kind_of(e) == k))},
        "by_verdict": by_verdict(entries),
        "by_kind": by_kind(entries),
        "distinct_errors": distinct_errors(entries),
        "corrections": sum(len(_records(e, "corrections")) for e in entries),
    }


def bugs_declared() -> int:
    """How many planted bugs the library declares (every module imported).

    Only bugs whose site is a library module count: a test module may declare demo bugs into the
    same registry, and the count must not depend on which tests ran before in the process.
    """
    from transformer_math import bugs

    registry = bugs.load_all()
    return sum(1 for name in registry
               if registry[name].module.split(".")[0] == "transformer_math")
