"""``tmath chapters``: the seeds' sections in reading order and what the claims check in each.

For every section of ``transformer_math.chapters`` (000's §8.3.0-§8.3.8 and its tables, 004's
chapters, the 003 concept page): the claims read in it (their first seed range falls there),
the claims that cite any line of it, the distinct seed errors (one per ``Refutation`` record,
counted at its quoted line: the same definition as the report's) and the cited corrections
(``corrections``) on its lines. Nothing is run: this is the registry's map of the
textbook. Examples::

    tmath chapters
    tmath chapters --lang zh --json -
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from transformer_math import safe_write
from transformer_math.commands.args import fail, json_text, output_file


def section_counts() -> list[dict[str, Any]]:
    """One row per section: key, titles, claims read there (by kind), claims citing it, and
    the distinct seed errors (measured, modelled) and cited corrections whose quoted line lies
    there, counted by :func:`transformer_math.claims.counts.section_row` (the report's table
    by section counts a run the same way)."""
    from transformer_math import chapters
    from transformer_math.claims import counts
    from transformer_math.claims.registry import Kind, all_claims, claim_json

    claims = all_claims()
    entries = [claim_json(c) for c in claims]
    rows = []
    for s in chapters.SECTIONS:
        citing = [c for c in claims
                  if any(r.seed == s.seed and r.lines[0] <= s.end and r.lines[1] >= s.start
                         for r in c.seed_refs)]
        row = counts.section_row(entries, s)
        rows.append({
            "section": s.key, "seed": s.seed, "lines": [s.start, s.end],
            "title_en": s.title_en, "title_zh": s.title_zh,
            "claims": row["claims"],
            "citing": len(citing),
            "distinct_errors": row["distinct_errors"],
            "modelled_errors": row["modelled_errors"],
            "by_kind": {k.value: n for k in Kind
                        if (n := sum(1 for c in claims if c.section == s.key and c.kind is k))},
            "corrections": row["corrections"],
        })
    return rows


def chapters_command(
    lang: Annotated[str, typer.Option("--lang", help="Language of the titles: en or zh.")] = "en",
    json_file: Annotated[Path | None, typer.Option(
        "--json", help="Write the table as JSON to FILE ('-' for standard output).")] = None,
) -> None:
    """The seeds' sections in reading order, with the claims, refuted statements and cited
    corrections in each (nothing is run)."""
    from transformer_math.i18n import LANGS

    if lang not in LANGS:
        fail(f"--lang must be one of {', '.join(LANGS)}, got {lang!r}")
    if json_file is not None and str(json_file) != "-":
        output_file("--json", json_file)
    rows = section_counts()
    totals = {k: sum(r[k] if isinstance(r[k], int) else len(r[k]) for r in rows)
              for k in ("claims", "distinct_errors", "modelled_errors", "corrections")}
    if json_file is not None:
        text = json_text({"sections": rows, "totals": totals}, indent=2, ensure_ascii=False)
        if str(json_file) == "-":
            typer.echo(text)
            return
        safe_write.write_text(json_file, text + "\n")
        typer.echo(f"wrote {json_file}")
        return
    title = "title_zh" if lang == "zh" else "title_en"
    typer.echo(f"{'section':<15}{'claims':>7}{'citing':>8}{'errors':>8}{'corr.':>7}  title")
    for r in rows:
        typer.echo(f"{r['section']:<15}{len(r['claims']):>7}{r['citing']:>8}"
                   f"{r['distinct_errors']:>8}{r['corrections']:>7}  {r[title]}")
    typer.echo(f"{'total':<15}{totals['claims']:>7}{'':>8}{totals['distinct_errors']:>8}"
               f"{totals['corrections']:>7}")
    typer.echo("errors: distinct seed errors shown by running code (one per refutation record, "
               f"counted at its quoted line); {totals['modelled_errors']} more by an analytic "
               "model")


def register(app: typer.Typer) -> None:
    """Add ``chapters`` to the ``tmath`` application."""
    app.command("chapters")(chapters_command)
