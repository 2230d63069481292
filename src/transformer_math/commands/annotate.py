"""``tmath annotate``: a seed document as HTML, each checked line range marked with its claims'
verdicts and linked to their evidence (issue 18; see ``transformer_math.seed_annotation``).

Examples::

    tmath annotate ~/seeds/000_200434394aa54b56.txt --report annotated/
    tmath verify --report report/ && tmath annotate 000_*.txt --report annotated/ \\
        --results report/ --lang zh

The seed file is the user's own copy (the project ships none). It is recognised by its SHA-256;
another file needs ``--seed`` and the page warns that its lines may not match. ``--results`` is
a results document (``tmath verify --json``) or a report folder holding ``results.json`` (the
badges then link to that folder's ``index.html``); without it the claims' expected verdicts
are shown, labelled as such.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from transformer_math.commands.args import fail, input_file, internal_work, output_folder


def annotate(
    seed_file: Annotated[Path, typer.Argument(
        help="Your copy of a seed document (000, 003 or 004).", show_default=False)],
    report: Annotated[Path, typer.Option(
        "--report", help="Folder to write the annotated page to.")],
    results: Annotated[Path | None, typer.Option(
        "--results",
        help="Results of a run: a results.json (tmath verify --json) or a report folder.")] = None,
    lang: Annotated[str, typer.Option("--lang", help="Language of the page: en or zh.")] = "en",
    seed: Annotated[str | None, typer.Option(
        "--seed", help="Which seed the file is (000, 003, 004), when its SHA-256 is not that "
        "of the copy the claims cite.")] = None,
) -> None:
    """Write SEED_FILE as HTML with every line range the claims check marked by verdict."""
    from transformer_math import chapters
    from transformer_math.i18n import LANGS

    if lang not in LANGS:
        fail(f"--lang must be one of {', '.join(LANGS)}, got {lang!r}")
    if seed is not None and seed not in chapters.SEED_FILES:
        fail(f"--seed must be one of {', '.join(sorted(chapters.SEED_FILES))}, got {seed!r}")
    input_file("SEED_FILE", seed_file)
    document = None
    origin = None
    page = None
    if results is not None:
        from transformer_math.report.results import read_results

        path = results / "results.json" if results.is_dir() else results
        if not path.is_file():
            fail(f"--results {str(results)!r} is neither a results file nor a report folder "
                 "holding results.json")
        try:
            document = read_results(path)
        except ValueError as exc:
            fail(f"--results: {exc}")
        origin = str(path)
        index = path.parent / "index.html"
        page = index if index.is_file() else None
    out = output_folder("--report", report)
    from transformer_math.seed_annotation import annotate as write_annotation
    from transformer_math.seed_annotation import check_claims, read_seed

    try:
        seed_id, text, _ = read_seed(seed_file, seed)  # size, encoding, unknown file: exit 2
    except ValueError as exc:
        fail(str(exc))
    if document is not None:
        try:  # every field checked, and every line against the seed's length, before drawing
            check_claims(document.get("claims", []), {
                s: len(text.splitlines()) if s == seed_id else 10**6
                for s in chapters.SEED_FILES})
        except ValueError as exc:
            fail(f"--results {origin}: {exc}")
    with internal_work():
        written = write_annotation(seed_file, out, results=document, results_origin=origin,
                                   report_page=page, lang=lang, seed=seed)
    typer.echo(f"wrote {written}")


def register(app: typer.Typer) -> None:
    """Add ``annotate`` to the ``tmath`` application."""
    app.command("annotate")(annotate)
