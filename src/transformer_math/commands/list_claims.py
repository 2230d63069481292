"""``tmath list``: the registered claims (nothing is run), as a table or ``--json``."""

from __future__ import annotations

from typing import Annotated

import typer

from transformer_math.commands.options import (
    LANGS,
    TIERS,
    LangOption,
    PatternOption,
    UsageError,
    choice,
    in_language,
    regex,
)
from transformer_math.commands.output import stdout

HELP_ORDER = 1
"""Place in ``tmath --help`` (``cli.register_extra_commands``)."""


def list_claims(
    json_output: Annotated[
        bool, typer.Option("--json", help="Print JSON instead of a table.")
    ] = False,
    tier: Annotated[
        str | None,
        typer.Option(
            "--tier",
            metavar="quick|full",
            help="quick or full: the claims `verify --tier` would run.",
        ),
    ] = None,
    pattern: PatternOption = None,
    lang: LangOption = "en",
    wide: Annotated[
        bool, typer.Option("--wide", help="Show every column (kind, statement, source, "
                           "falsifier) with whole cells, one line per claim, however wide.")
    ] = False,
) -> None:
    """List the registered claims: id, tier, expected verdict, kind, statement, source, falsifier.

    The table fits the terminal (``COLUMNS``): id, tier and expected verdict always, the other
    columns as the width leaves room (cut with ...); ``--wide`` shows them all, whole.
    ``--lang zh`` shows the statements in Chinese (English where no translation exists); the
    JSON carries both (``statement``, ``statement_zh``) whatever the language.
    """
    if tier is not None:
        tier = choice(tier, TIERS, "--tier")
    lang = choice(lang, LANGS, "--lang")
    pattern = regex(pattern)

    from transformer_math.claims.registry import all_claims, select_claims
    from transformer_math.commands._claim_views import list_columns, list_table, table_width
    from transformer_math.report.results import claim_to_json
    from transformer_math.report.table import json_text

    claims = [claim_to_json(c) for c in select_claims(all_claims(), tier=tier, pattern=pattern)]
    if pattern and not claims:
        raise UsageError(f"no claim matches -k {pattern!r}")
    if json_output:
        typer.echo(json_text({"claims": claims}))
        return
    out = stdout()
    shown = in_language(claims, lang)
    columns = list_columns(shown, None if wide else out.width)
    if wide:
        from rich.console import Console

        out = Console(highlight=False, width=max(table_width(columns), out.width))
    out.print(list_table(shown, columns))
    from transformer_math.claims import counts

    shown_counts = counts.catalogue(claims)
    errors = shown_counts["distinct_errors"]["measured"]
    modelled = shown_counts["distinct_errors"]["modelled"]
    by_kind = ", ".join(f"{n} {k}" for k, n in shown_counts["kinds"].items())
    out.print(f"{len(claims)} claims ({by_kind}); {errors} distinct seed errors expected "
              f"refuted by running code" + (f", {modelled} by an analytic model" if modelled
                                             else ""), style="dim")


def register(app: typer.Typer) -> None:
    """Add ``tmath list`` to ``app``."""
    app.command("list")(list_claims)
