"""``tmath report DIR``: render a saved ``tmath verify --json`` run as an HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from transformer_math.commands.args import output_folder
from transformer_math.commands.options import LANGS, LangOption, UsageError, choice
from transformer_math.commands.output import stdout, write_output

HELP_ORDER = 4
"""Place in ``tmath --help`` (``cli.register_extra_commands``)."""


def report(
    out_dir: Annotated[Path, typer.Argument(metavar="DIR", help="Folder of the report.")],
    from_file: Annotated[
        Path | None,
        typer.Option("--from", help="Results document to render (default DIR/results.json)."),
    ] = None,
    lang: LangOption = "en",
) -> None:
    """Render a saved `tmath verify --json` run as an HTML report in DIR (--lang zh: Chinese)."""
    lang = choice(lang, LANGS, "--lang")
    from transformer_math.report.html import render_report
    from transformer_math.report.results import read_results

    source = from_file if from_file is not None else out_dir / "results.json"
    try:
        document = read_results(source)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    output_folder("report folder", out_dir)
    index = write_output("report folder", out_dir,
                   lambda: render_report(document, out_dir, lang=lang))
    stdout().print(f"wrote {index}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``tmath report`` to ``app``."""
    app.command("report")(report)
