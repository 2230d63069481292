"""Terminal views of results documents and benchmark results, built with ``rich``.

Every function takes the JSON form (``ClaimResult.to_json()`` entries, ``claim_to_json`` entries,
``BenchmarkResult.to_json()`` entries), so a saved run prints exactly like a live one. Values are
written compactly by :func:`format_value`: floats with 4 significant digits, long lists shortened
to their first and last items, long strings cut with an ellipsis.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.json import JSON
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from transformer_math.report.results import dumps, summary_from_claims

DASH = "—"
ELLIPSIS = "…"

VERDICT_STYLES: dict[str, str] = {
    "verified": "bold green",
    "refuted": "bold magenta",
    "failed": "bold red",
    "cited": "bold blue",
    "inconclusive": "bold yellow",
}


def stdout_console() -> Console:
    """A rich console for standard output; piped output (CI logs, files) gets a 160-column page
    instead of rich's 80-column default, so tables are not squeezed."""
    import shutil
    import sys

    width = None if sys.stdout.isatty() else max(shutil.get_terminal_size((160, 24)).columns, 160)
    return Console(highlight=False, width=width)


def format_value(value: Any, *, max_items: int = 4, max_chars: int = 48) -> str:
    """A compact one-line rendering of a JSON value for a table cell.

    ``None`` is a dash, floats get 4 significant digits (``0.1235``, ``1.05e+06``), integers stay
    exact, a list longer than ``max_items`` shows its first ``max_items - 1`` items, an ellipsis,
    its last item and its length; strings longer than ``max_chars`` are cut.
    """
    text = _format(value, max_items=max_items)
    if len(text) > max_chars:
        text = text[: max(max_chars - 1, 1)] + ELLIPSIS
    return text


def _format(value: Any, *, max_items: int) -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        items = list(value.items())
        parts = [
            f"{k}: {_format(v, max_items=max(max_items - 1, 2))}" for k, v in items[:max_items]
        ]
        if len(items) > max_items:
            parts.append(ELLIPSIS)
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, Sequence):
        inner = max(max_items - 1, 2)
        items = [_format(v, max_items=inner) for v in value]
        if len(items) <= max_items:
            return "[" + ", ".join(items) + "]"
        head = items[: max(max_items - 1, 1)]
        return "[" + ", ".join([*head, ELLIPSIS, items[-1]]) + f"] ({len(items)} items)"
    return str(value)


def verdict_text(verdict: str | None) -> Text:
    """The verdict word in its colour (green verified, magenta refuted, red failed, blue cited)."""
    word = verdict or DASH
    return Text(word, style=VERDICT_STYLES.get(word, "bold"))


def falsifier_text(falsifier: Mapping[str, Any] | None) -> Text:
    """``yes`` when the falsifier was caught, a red ``NO`` when not, a dash when there is none."""
    if not falsifier or falsifier.get("caught") is None:
        return Text(DASH, style="dim")
    if falsifier.get("caught"):
        return Text("yes", style="green")
    return Text("NO", style="bold red")


def results_table(claims: Iterable[Mapping[str, Any]], *, title: str | None = None) -> Table:
    """One row per claim: id, verdict, predicted, measured, falsifier caught, seconds."""
    table = Table(title=title, box=box.SIMPLE_HEAVY, header_style="bold", pad_edge=False)
    table.add_column("claim", no_wrap=True, overflow="fold")
    table.add_column("verdict", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("predicted", overflow="fold")
    table.add_column("measured", overflow="fold")
    table.add_column("falsifier caught", justify="center", no_wrap=True)
    table.add_column("s", justify="right", no_wrap=True)
    for c in claims:
        table.add_row(
            str(c.get("id")),
            verdict_text(c.get("verdict")),
            str(c.get("kind") or DASH),
            format_value(c.get("predicted")),
            format_value(c.get("measured")),
            falsifier_text(c.get("falsifier")),
            DASH if c.get("seconds") is None else f"{float(c['seconds']):.2f}",
        )
    return table


def summary_text(
    summary: Mapping[str, Any] | None, claims: Iterable[Mapping[str, Any]] = ()
) -> Text:
    """``N claims: a verified, b refuted, c failed, d cited; falsifiers caught f/g; ...``.

    Counts come from ``summary`` when given, else they are computed from ``claims``.
    """
    s: dict[str, Any] = dict(summary) if summary else summary_from_claims(claims)
    text = Text(f"{s.get('total', 0)} claims: ")
    for i, verdict in enumerate(VERDICT_STYLES):
        if i:
            text.append(", ")
        text.append(f"{s.get(verdict, 0)} {verdict}", style=VERDICT_STYLES[verdict])
    errors = s.get("distinct_errors")
    if isinstance(errors, Mapping):
        text.append(f"; {errors.get('measured', 0)} distinct seed errors shown by running code")
        if errors.get("modelled"):
            text.append(f" (+{errors['modelled']} by an analytic model)")
    text.append(f"; falsifiers caught {s.get('falsifiers_caught', 0)}/{s.get('falsifiers', 0)}")
    problems = int(s.get("problems", 0) or 0)
    text.append("; ")
    text.append(
        f"{problems} problem{'s' if problems != 1 else ''}",
        style="bold red" if problems else "green",
    )
    text.append(f"; {float(s.get('seconds', 0.0) or 0.0):.2f} s")
    context = [f"{key} {s[key]}" for key in ("seed", "tier", "size") if s.get(key) is not None]
    if context:
        text.append(f" ({', '.join(context)})", style="dim")
    return text


def problem_lines(claims: Iterable[Mapping[str, Any]]) -> list[Text]:
    """One line per claim that makes ``verify`` exit 1: a failed check or an uncaught falsifier."""
    lines: list[Text] = []
    for c in claims:
        falsifier = c.get("falsifier") if isinstance(c.get("falsifier"), Mapping) else None
        if c.get("verdict") == "failed":
            reason = c.get("error") or f"measured {format_value(c.get('measured'), max_chars=80)}"
            reason += (
                f", predicted {format_value(c.get('predicted'))}" if not c.get("error") else ""
            )
            lines.append(
                Text.assemble(("FAILED ", "bold red"), (str(c.get("id")), "bold"), f": {reason}")
            )
        undecided = "inconclusive" in (c.get("verdict"), c.get("expected"))
        if c.get("expected_met") is False and c.get("verdict") != "failed" and not undecided:
            lines.append(
                Text.assemble(
                    ("UNEXPECTED VERDICT ", "bold red"),
                    (str(c.get("id")), "bold"),
                    f": expected {c.get('expected')}, obtained {c.get('verdict')}",
                )
            )
        if falsifier is not None and falsifier.get("caught") is False:
            lines.append(
                Text.assemble(
                    ("FALSIFIER NOT CAUGHT ", "bold red"),
                    (str(c.get("id")), "bold"),
                    f": bug {falsifier.get('name')!r} planted, verdict {falsifier.get('verdict')}"
                    f" (measured {format_value(falsifier.get('measured'))})",
                )
            )
    return lines


def claims_list_table(claims: Iterable[Mapping[str, Any]], *, statement_chars: int = 70) -> Table:
    """``tmath list``: id, tier, expected verdict, source, falsifier bug, statement (cut)."""
    table = Table(box=box.SIMPLE_HEAVY, header_style="bold", pad_edge=False)
    table.add_column("claim", no_wrap=True, min_width=38)
    table.add_column("tier", no_wrap=True, min_width=5)
    table.add_column("kind", no_wrap=True)
    table.add_column("expects", no_wrap=True)
    table.add_column("source", no_wrap=True, overflow="ellipsis", max_width=28)
    table.add_column("falsifier", no_wrap=True, overflow="ellipsis", max_width=28)
    table.add_column("statement", no_wrap=True, overflow="ellipsis", ratio=1)
    for c in claims:
        falsifier = c.get("falsifier")
        table.add_row(
            str(c.get("id")),
            str(c.get("tier")),
            str(c.get("kind") or DASH),
            str(c.get("expected") or DASH),
            str(c.get("source")),
            str(falsifier.get("name")) if isinstance(falsifier, Mapping) else DASH,
            format_value(c.get("statement"), max_chars=statement_chars),
        )
    return table


def _field_grid(rows: Iterable[tuple[str, RenderableType]]) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for key, value in rows:
        # a plain string is data, never rich markup: "TC^0[log n]" keeps its brackets
        grid.add_row(key, Text(value) if isinstance(value, str) else value)
    return grid


def claim_detail(c: Mapping[str, Any]) -> RenderableType:
    """Everything about one claim result (``tmath show``): fields, notes, details, falsifier."""

    def full(value: Any) -> str:
        return format_value(value, max_items=64, max_chars=4000)

    parts: list[RenderableType] = [
        _field_grid(
            [
                ("claim", Text(str(c.get("id")), style="bold")),
                ("verdict", verdict_text(c.get("verdict"))),
                ("kind", str(c.get("kind") or DASH)),
                ("tier", str(c.get("tier"))),
                ("source", str(c.get("source"))),
                ("statement", str(c.get("statement"))),
                ("predicted", full(c.get("predicted"))),
                ("measured", full(c.get("measured"))),
                ("tolerance", full(c.get("tolerance"))),
                ("expected", f"{c.get('expected') or DASH} (version {c.get('version', 1)})"),
                ("seed lines", full(c.get("seed_refs"))),
                ("refutes", full(c.get("refutes"))),
                ("corrections", full(c.get("corrections"))),
                ("section", f"{c.get('section') or DASH}"
                            + (f" (project {c['module']})" if c.get("module") else "")),
                ("per seed", full(c.get("per_seed"))),
                ("pass conditions", full(c.get("margins"))),
                ("seed's version", full(c.get("seed_margins"))),
                ("decisive", full(c.get("decisive"))),
                ("review notes", str(c.get("audit") or DASH)),
                ("seconds", full(c.get("seconds"))),
            ]
        )
    ]
    if c.get("error"):
        parts.append(Text.assemble(("error: ", "bold red"), str(c["error"])))
    falsifier = c.get("falsifier")
    if isinstance(falsifier, Mapping):
        caught = falsifier.get("caught")
        caught_text = falsifier_text(falsifier) if caught is not None else Text("not run")
        parts.append(
            Panel(
                _field_grid(
                    [
                        ("name", str(falsifier.get("name"))),
                        ("description", str(falsifier.get("description") or DASH)),
                        ("verdict", verdict_text(falsifier.get("verdict"))),
                        ("measured", full(falsifier.get("measured"))),
                        ("caught", caught_text),
                    ]
                ),
                title="falsifier",
                title_align="left",
                box=box.ROUNDED,
            )
        )
    else:
        parts.append(Text("falsifier: none", style="dim"))
    notes = [str(n) for n in c.get("notes") or []]
    if notes:
        parts.append(
            Panel(Group(*(Text(f"- {n}") for n in notes)), title="notes", title_align="left")
        )
    details = c.get("details")
    if details:
        parts.append(Panel(JSON(dumps(details)), title="details", title_align="left"))
    figures = c.get("figures") or []
    if figures:
        titles = ", ".join(repr(str(f.get("title"))) for f in figures if isinstance(f, Mapping))
        parts.append(Text(f"figures: {titles} (drawn by `tmath verify --report DIR`)", style="dim"))
    return Group(*parts)


def bench_tables(results: Sequence[Mapping[str, Any]]) -> list[Table]:
    """``tmath bench``: a table of ratios and, when present, a table of time exponents."""
    tables: list[Table] = []
    ratios = [r for r in results if r.get("kind") == "ratio"]
    exponents = [r for r in results if r.get("kind") == "exponent"]
    if ratios:
        table = Table(title="ratios (candidate / baseline, paired medians)", box=box.SIMPLE_HEAVY)
        table.add_column("benchmark", no_wrap=True, overflow="fold")
        table.add_column("baseline ms", justify="right")
        table.add_column("candidate ms", justify="right")
        table.add_column("ratio", justify="right", style="bold")
        table.add_column("target", justify="right")
        table.add_column("met", justify="center")
        for r in ratios:
            target = r.get("target_ratio")
            met = r.get("met")
            met_text = (
                Text(DASH, style="dim")
                if met is None
                else Text("yes", style="green")
                if met
                else Text("NO", style="bold red")
            )
            table.add_row(
                str(r.get("name")),
                format_value(1e3 * float(r["baseline_median_s"])),
                format_value(1e3 * float(r["candidate_median_s"])),
                format_value(float(r["ratio"])),
                DASH if target is None else f"<= {format_value(float(target))}",
                met_text,
            )
        tables.append(table)
    if exponents:
        table = Table(title="time exponents (log t = a log n + b)", box=box.SIMPLE_HEAVY)
        table.add_column("benchmark", no_wrap=True, overflow="fold")
        table.add_column("sizes n")
        table.add_column("ms at n", overflow="fold")
        table.add_column("exponent a", justify="right", style="bold")
        table.add_column("predicted", justify="right")
        table.add_column("r²", justify="right")
        for r in exponents:
            table.add_row(
                str(r.get("name")),
                format_value(r.get("sizes"), max_items=6, max_chars=60),
                format_value(
                    [1e3 * float(t) for t in r.get("times") or []], max_items=6, max_chars=60
                ),
                format_value(float(r["slope"])),
                format_value(r.get("predicted")),
                format_value(r.get("r_squared")),
            )
        tables.append(table)
    return tables


def json_text(document: Any) -> str:
    """Pretty strict JSON (used by the ``--json`` flags that print to stdout)."""
    return dumps(document).rstrip("\n")


def timing_table(claims: Iterable[Mapping[str, Any]], run: Mapping[str, Any] | None = None
                 ) -> Table:
    """Where a run's time went (``tmath verify --profile``), slowest claim first: the tasks'
    CPU seconds, the check and the falsifier (each with its seeds), and the split into
    training (forward, backward, optimizer), evaluation and the rest (``execution.time_split``).
    """
    title = "where the time went"
    if run:
        title += (f" ({run.get('executor')}, {run.get('workers')} workers, "
                  f"{float(run.get('wall_seconds', 0.0)):.0f} s wall)")
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for name in ("claim", "tasks CPU s", "check s", "falsifier s", "train s", "eval s",
                 "other s"):
        table.add_column(name, justify="left" if name == "claim" else "right")
    rows = []
    for c in claims:
        t = c.get("timing") or {}
        split = t.get("split") or {}
        parts = {k: sum(float(p.get(k, 0.0)) for p in split.values())
                 for k in ("train_forward_s", "backward_s", "optimizer_s", "eval_forward_s",
                           "other_s")}
        train = parts["train_forward_s"] + parts["backward_s"] + parts["optimizer_s"]
        rows.append((float(t.get("tasks_cpu_s", c.get("seconds", 0.0)) or 0.0), c["id"], t,
                     train if split else None, parts))
    for cpu, claim_id, t, train, parts in sorted(rows, key=lambda r: -r[0]):
        def cell(x: Any) -> str:
            return "-" if x is None else f"{float(x):.1f}"
        table.add_row(claim_id, cell(cpu), cell(t.get("check_s")), cell(t.get("falsifier_s")),
                      cell(train), cell(parts["eval_forward_s"] if train is not None else None),
                      cell(parts["other_s"] if train is not None else None))
    return table
