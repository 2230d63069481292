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
from rich.console import Console
from rich.table import Table
from rich.text import Text

from transformer_math.report.results import dumps, summary_from_claims

DASH = "—"
ELLIPSIS = "…"

VERDICT_STYLES: dict[str, str] = {
    "verified": "bold green",
    "refuted": "bold cyan",
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
    """The verdict word in its colour (green verified, cyan refuted, red failed, blue cited)."""
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
    """One row per claim: id, verdict, kind, predicted, measured, falsifier caught, seconds."""
    table = Table(
        title=title, box=box.SIMPLE_HEAVY, header_style="bold", pad_edge=False,
        collapse_padding=True, show_edge=False,
    )
    # Fits 80 columns: the claim id, kind and values fold onto further lines; the verdict
    # ("inconclusive"), the caught mark and the seconds have fixed widths and are never cut.
    table.add_column("claim", overflow="fold")
    table.add_column("verdict", no_wrap=True, width=12)
    table.add_column("kind", overflow="fold")
    table.add_column("predicted", overflow="fold")
    table.add_column("measured", overflow="fold")
    table.add_column("caught", justify="center", no_wrap=True, width=6)
    table.add_column("s", justify="right", no_wrap=True, width=6)
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
