"""Terminal views of claims that fit the terminal: ``tmath list`` and ``tmath show`` (issue 38.4).

``tmath list`` at 80 to 100 columns once dropped the tier and the expected verdict, because
every column was squeezed alike. :func:`list_table` instead chooses its columns for the width:
the id, the tier and the expected verdict are never cut (each column as wide as its longest
value), then the kind, and then the statement, the source and the falsifier as the width leaves
room for them (each at least :data:`MIN_TEXT_WIDTH` columns, cut with an ellipsis). ``--wide``
shows every column with every cell whole, one line per claim, as wide as that takes (like
``kubectl get -o wide``; page it with ``less -S``).

``tmath show ID`` (:func:`claim_detail`) prints every part of the claim result, each in a form
that wraps at the terminal's width: the fields, the statement, the pass conditions with each
number named for what it is (the quantity, its predicted and measured values, the condition
tested with its threshold, and the tested number where it is not the quantity itself: a
deviation ``|measured - predicted|`` is never shown as the quantity, issue 38.3; the slack and
whether it holds), the seed's version of them (the seed's own numbers held to the same
conditions: a refuted claim's fail, coloured as ``refuted``, not as a failure), the refutations
(seed file and lines, the verbatim quote, what it says, how it was read, what is correct), the
corrections, the falsifier (the planted bug, its verdict, the pass conditions that failed under
it, ``failed_conditions``, and the values measured without and with it), the per-seed numbers,
the notes and the details.

Rows are rich :class:`~rich.table.Table` objects (rich measures CJK characters as two
columns, so Chinese statements fit too). The module name starts with ``_`` so that the command
discovery of ``cli`` does not import it (and rich) for ``tmath --help``; ``list`` and ``show``
import it inside their functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from transformer_math.report.table import VERDICT_STYLES, format_value, verdict_text

DASH = "—"
MIN_TEXT_WIDTH = 16
"""Narrowest a cut text column (statement, source, falsifier) is shown; below it is left out."""
REFUTED_COLOUR = VERDICT_STYLES["refuted"].split()[-1]
"""The terminal colour of ``refuted`` (cyan, the report's teal): a finding about the seed."""
COLUMN_GAP = 3
"""Columns between two columns of a ``box.SIMPLE_HEAVY`` table without edges (pad, rule, pad)."""

#: the columns of ``tmath list`` that are always shown, never cut
_ALWAYS = ("claim", "tier", "expects")
#: the others, by priority, with their widest useful width (0: shown whole or not at all)
_COLUMNS: dict[str, int] = {"kind": 0, "statement": 70, "source": 28, "falsifier": 28}


def _cell(c: Mapping[str, Any], column: str) -> str:
    if column == "claim":
        return str(c.get("id"))
    if column == "expects":
        return str(c.get("expected") or DASH)
    if column == "falsifier":
        falsifier = c.get("falsifier")
        return str(falsifier.get("name")) if isinstance(falsifier, Mapping) else DASH
    if column == "statement":
        return " ".join(str(c.get("statement") or DASH).split())
    return str(c.get(column) or DASH)


def list_columns(claims: Sequence[Mapping[str, Any]], width: int | None) -> dict[str, int]:
    """The columns of ``tmath list`` at ``width`` terminal columns, each with its width.

    The id, tier and expected verdict always, as wide as their longest value; then, while
    they fit, the kind (never cut) and the statement, source and falsifier (cut to what is
    left, at most their useful width, at least :data:`MIN_TEXT_WIDTH`). ``width=None``
    (``--wide``): every column, as wide as its longest value.
    """
    def widest(column: str) -> int:
        return max([cell_len(column), *(cell_len(_cell(c, column)) for c in claims)])

    chosen = {name: widest(name) for name in _ALWAYS}
    if width is None:
        return {**chosen, **{name: widest(name) for name in _COLUMNS}}
    used = table_width(chosen)
    for name, cap in _COLUMNS.items():
        room = width - used - COLUMN_GAP
        want = widest(name) if cap == 0 else min(widest(name), cap)
        if cap == 0 and want > room:
            continue
        if cap and room < min(MIN_TEXT_WIDTH, want):
            continue
        chosen[name] = min(want, room)
        used += chosen[name] + COLUMN_GAP
    return chosen


def table_width(columns: Mapping[str, int]) -> int:
    """Terminal columns a :func:`list_table` with these column widths takes."""
    return sum(columns.values()) + COLUMN_GAP * max(len(columns) - 1, 0)


def list_table(claims: Sequence[Mapping[str, Any]], columns: Mapping[str, int]) -> Table:
    """``tmath list``: a table of ``columns`` (from :func:`list_columns`); a cell longer than its
    column is cut with an ellipsis."""
    table = Table(box=box.SIMPLE_HEAVY, header_style="bold", pad_edge=False, show_edge=False)
    for name, w in columns.items():
        table.add_column(name, width=w, no_wrap=True, overflow="ellipsis")
    for c in claims:
        table.add_row(*(Text(_cell(c, n)) for n in columns))
    return table


# --- tmath show -------------------------------------------------------------------------------


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return DASH if value is None else str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:.4g}"


def _holds(m: Mapping[str, Any]) -> bool | None:
    slack = m.get("slack")
    if isinstance(slack, int | float) and not isinstance(slack, bool):
        return bool(slack >= 0)
    if isinstance(slack, str):  # "NaN" / "-Infinity" as written by to_jsonable
        return slack == "Infinity"
    return None


def measured_quantity(m: Mapping[str, Any]) -> Any:
    """The measured value of the quantity a pass condition is about: the margin's ``measured``
    (issue 38.3), else (a document written before it) the tested value itself."""
    return m.get("measured") if "test" in m else m.get("value")


def _test_parts(m: Mapping[str, Any]) -> tuple[str, str]:
    """The two sides of the inequality a pass condition tests, in words: ``(tested, bound)``.

    A margin tests ``value sense threshold`` (its ``test`` field, issue 38.3). ``tested`` is
    ``"measured"`` when ``value`` is the measured quantity itself (``at_most``, ``at_least``),
    ``"|measured - predicted|"`` for ``close_to``, ``"log10 measured"`` for ``exceeds``;
    ``bound`` is ``""`` when the threshold is a plain number, else its words
    (``"0.05 |predicted|"``). A document older than the field reads as ``("measured", "")``.
    """
    sense, test = str(m.get("sense") or "?"), m.get("test")
    if not isinstance(test, str) or not test:
        return "measured", ""
    tested, found, bound = test.partition(f" {sense} ")
    if not found:
        return test, ""
    raw = m.get("threshold")
    plain = format(raw, "g") if isinstance(raw, int | float) else str(raw)
    return tested, "" if bound == plain else bound


def conditions_caption(margins: Sequence[Mapping[str, Any]]) -> str:
    """What the ``tested`` and ``threshold`` columns of :func:`conditions_table` hold, in words:
    ``tested = |measured - predicted|; threshold = 0.05 |predicted|`` (each distinct form
    once, in order of appearance)."""
    tested: list[str] = []
    bounds: list[str] = []
    for m in margins:
        t, b = _test_parts(m)
        if t not in tested:
            tested.append(t)
        if b and b not in bounds:
            bounds.append(b)
    text = "tested = " + " or ".join(tested)
    if bounds:
        text += "; threshold = " + (", ".join(bounds) if len(bounds) <= 4 else
                                     ", ".join(bounds[:4]) + ", ...")
    return text


def conditions_table(margins: Iterable[Mapping[str, Any]], title: str, *,
                     seed: bool = False) -> Table:
    """Pass conditions as rows, each number named for what it is: the quantity, its predicted
    value (where the condition compares with one), its measured value, the number tested (where
    it is not the measured value itself but derived from it: the deviation ``|measured -
    predicted|`` of ``close_to``, the ``log10`` of ``exceeds``), the threshold it must meet
    (``<= 1.95``), and whether it holds. The caption says in words what was tested and how the
    thresholds were set (:func:`conditions_caption`), so a deviation is never read as the
    quantity (issue 38.3: "Var(q.k) ... measured 0.02319" when the variance was 15.98). The
    slack (threshold minus tested, signed) is in ``tmath show --json``; ``tmath margins``
    compares it with the spread between seeds.

    ``seed=True``: the seed's own version of the statement held to the same conditions; a
    condition that does not hold there refutes the seed (shown in the colour of ``refuted``,
    not in the red of a failure of the project).
    """
    margins = list(margins)
    # columns that would only repeat another are left out: no predicted value anywhere, or
    # every tested number the measured value itself (then the caption has nothing to say)
    with_predicted = any(m.get("predicted") is not None for m in margins)
    with_tested = any(_test_parts(m)[0] != "measured" for m in margins)
    caption = conditions_caption(margins) if with_tested else None
    table = Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE,
                  pad_edge=False, show_edge=False, expand=True, caption=caption,
                  caption_justify="left", caption_style="dim")
    table.add_column("quantity", ratio=1, overflow="fold")
    if with_predicted:
        table.add_column("predicted", no_wrap=True, justify="right")
    table.add_column("measured", no_wrap=True, justify="right")
    if with_tested:
        table.add_column("tested", no_wrap=True, justify="right")
    table.add_column("threshold", no_wrap=True)
    table.add_column("holds", no_wrap=True)
    for m in margins:
        holds = _holds(m)
        if holds is None:
            verdict = Text(DASH)
        elif holds:
            verdict = Text("yes", style="green")
        elif seed:
            verdict = Text("no", style=f"bold {REFUTED_COLOUR}")
        else:
            verdict = Text("NO", style="bold red")
        cells: list[RenderableType] = [Text(str(m.get("name") or DASH))]
        if with_predicted:
            cells.append(_number(m.get("predicted")))
        cells.append(_number(measured_quantity(m)))
        if with_tested:
            cells.append(_number(m.get("value")))
        cells += [f"{m.get('sense') or '?'} {_number(m.get('threshold'))}", verdict]
        table.add_row(*cells)
    return table


def _lines(record: Mapping[str, Any]) -> str:
    line, to_line = record.get("line"), record.get("to_line")
    span = f"{line}" if to_line in (None, line) else f"{line}-{to_line}"
    also = record.get("also") or []
    extra = ", ".join(f"{a[0]}:{a[1]}" for a in also if isinstance(a, list) and len(a) == 2)
    return f"{record.get('seed')}:{span}" + (f" (also {extra})" if extra else "")


def _record_panel(record: Mapping[str, Any], title: str) -> Panel:
    rows = [(key, record.get(key)) for key in ("quote", "says", "reading", "correct", "source")]
    return Panel(_grid([(k, str(v)) for k, v in rows if v]), title=title, title_align="left",
                 box=box.ROUNDED)


def _grid(rows: Iterable[tuple[str, RenderableType | str]]) -> Table:
    grid = Table.grid(padding=(0, 2), expand=True)
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold", ratio=1)
    for key, value in rows:
        grid.add_row(key, Text(value) if isinstance(value, str) else value)  # data, not markup
    return grid


def _per_seed_table(per_seed: Mapping[str, Any]) -> Table:
    seeds = per_seed.get("seeds") or []
    table = Table(title=f"per seed ({len(seeds)} seeds: {', '.join(map(str, seeds))})",
                  title_justify="left", title_style="bold", box=box.SIMPLE, pad_edge=False,
                  show_edge=False, expand=True)
    table.add_column("value", ratio=1, overflow="fold")
    for head in ("mean", "spread", "min", "max"):
        table.add_column(head, no_wrap=True, justify="right")
    for name in per_seed.get("values") or {}:
        table.add_row(Text(str(name)), *(_number((per_seed.get(h) or {}).get(name))
                                         for h in ("mean", "spread", "min", "max")))
    return table


def _falsifier_panel(falsifier: Mapping[str, Any], measured: Any = None) -> Panel:
    """The planted bug, whether the check caught it, and why: the pass conditions that failed
    with the bug planted (``failed_conditions``, issue 38.3), so that a falsifier whose values
    look alike with and without the bug still says which condition it broke; then the values
    measured without and with the bug."""
    caught = falsifier.get("caught")
    caught_text = (Text("not run") if caught is None else
                   Text("yes: the check fails with the bug planted", style="green") if caught
                   else Text("NO: the check passes with the bug planted", style="bold red"))
    rows: list[tuple[str, RenderableType | str]] = [
        ("bug", str(falsifier.get("bug") or falsifier.get("name") or DASH)),
        ("description", str(falsifier.get("description") or DASH)),
        ("verdict", verdict_text(falsifier.get("verdict"))),
        ("caught", caught_text),
    ]
    if falsifier.get("error"):
        rows.append(("error", str(falsifier["error"])))
    parts: list[RenderableType] = [_grid(rows)]
    # "failed_conditions" since issue 38.3; "failed" in documents of the first cut
    found = falsifier.get("failed_conditions", falsifier.get("failed"))
    failed = [m for m in found if isinstance(m, Mapping)] if isinstance(found, list) else []
    if failed:
        parts.append(conditions_table(
            failed, "pass conditions that failed with the bug (why it was caught)"))
    elif caught:
        parts.append(Text("pass conditions that failed with the bug: none recorded",
                          style="dim"))
    if falsifier.get("measured") is not None:
        parts.append(_grid([
            ("measured without the bug", format_value(measured, max_items=64, max_chars=4000)),
            ("measured with the bug", format_value(falsifier.get("measured"), max_items=64,
                                                   max_chars=4000)),
        ]))
    return Panel(Group(*parts), title=f"falsifier {falsifier.get('name')}", title_align="left",
                 box=box.ROUNDED)


def claim_detail(c: Mapping[str, Any]) -> RenderableType:
    """Everything about one claim result, for ``tmath show`` (see the module docstring)."""
    def full(value: Any) -> str:
        return format_value(value, max_items=64, max_chars=4000)

    met = c.get("expected_met")
    expected = f"{c.get('expected') or DASH}" + ("" if met is None else
                                                (" (met)" if met else " (NOT met)"))
    section = f"{c.get('section') or DASH}" + (f" (project {c['module']})" if c.get("module")
                                                else "")
    refs = ", ".join(f"{r.get('seed')}:{r['lines'][0]}-{r['lines'][1]}"
                     for r in c.get("seed_refs") or []
                     if isinstance(r, Mapping) and isinstance(r.get("lines"), list)
                     and len(r["lines"]) == 2)
    parts: list[RenderableType] = [_grid([
        ("claim", Text(str(c.get("id")), style="bold")),
        ("verdict", verdict_text(c.get("verdict"))),
        ("expected", f"{expected}, version {c.get('version', 1)}"),
        ("kind", str(c.get("kind") or DASH)),
        ("tier", str(c.get("tier") or DASH)),
        ("section", section),
        ("source", str(c.get("source") or DASH)),
        ("seed lines", refs or DASH),
        ("seconds", _number(c.get("seconds"))),
    ])]
    parts.append(Panel(Text(str(c.get("statement") or DASH)), title="statement",
                       title_align="left", box=box.ROUNDED))
    if c.get("error"):
        parts.append(Text.assemble(("error: ", "bold red"), str(c["error"])))
    parts.append(_grid([("predicted", full(c.get("predicted"))),
                        ("measured", full(c.get("measured"))),
                        ("tolerance", full(c.get("tolerance")))]))
    for key, title in (("margins", "pass conditions (the correct statement)"),
                       ("seed_margins", "the seed's version (the seed's own numbers held to "
                                        "the same conditions: a 'no' refutes the seed)"),
                       ("decisive", "what this run must reach to decide the statement")):
        found = [m for m in c.get(key) or [] if isinstance(m, Mapping)]
        if found:
            parts.append(conditions_table(found, title, seed=key == "seed_margins"))
        elif key == "margins":
            parts.append(Text("pass conditions: none recorded", style="dim"))
    if isinstance(c.get("per_seed"), Mapping):
        parts.append(_per_seed_table(c["per_seed"]))
    refutes = [r for r in c.get("refutes") or [] if isinstance(r, Mapping)]
    for r in refutes:
        parts.append(_record_panel(r, f"refutes {_lines(r)}"))
    if not refutes:
        parts.append(Text("refutes: nothing", style="dim"))
    for r in (r for r in c.get("corrections") or [] if isinstance(r, Mapping)):
        parts.append(_record_panel(r, f"corrects {_lines(r)}"))
    falsifier = c.get("falsifier")
    if isinstance(falsifier, Mapping):
        parts.append(_falsifier_panel(falsifier, c.get("measured")))
    else:
        parts.append(Text("falsifier: none", style="dim"))
    notes = [str(n) for n in c.get("notes") or []]
    if notes:
        parts.append(Panel(Group(*(Text(f"- {n}") for n in notes)), title="notes",
                           title_align="left", box=box.ROUNDED))
    if c.get("details"):
        from rich.json import JSON

        from transformer_math.typed_json import dumps

        parts.append(Panel(JSON(dumps(c["details"])), title="details", title_align="left",
                           box=box.ROUNDED))
    if c.get("audit"):
        parts.append(Panel(Text(str(c["audit"])), title="review notes", title_align="left",
                           box=box.ROUNDED))
    figures = [f for f in c.get("figures") or [] if isinstance(f, Mapping)]
    if figures:
        titles = ", ".join(repr(str(f.get("title"))) for f in figures)
        parts.append(Text(f"figures: {titles} (drawn by `tmath verify --report DIR`)",
                          style="dim"))
    return Group(*parts)
