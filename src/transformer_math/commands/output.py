"""Where ``tmath`` commands write: the terminal consoles, the progress bar, ``--json`` files and
output folders (no ``register``: this module adds no command).

Tables go to stdout (:func:`stdout`, width from ``COLUMNS`` or the terminal); progress and, with
``--json -``, every human-readable line go to stderr, so that the JSON on stdout can be piped.
A file that cannot be written is a one-line usage error (:func:`write_output`).

Imports only ``typer`` and the standard library at module level (rich inside the functions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from transformer_math.commands.options import UsageError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


def stdout() -> Console:
    """The console of tables: ``COLUMNS`` columns wide when that is set (a user's or a test's
    choice, piped or not), else ``report.table.stdout_console`` (the terminal's width; 160
    columns when piped)."""
    import os

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        from rich.console import Console

        return Console(highlight=False, width=int(columns))
    from transformer_math.report.table import stdout_console

    return stdout_console()


def stderr() -> Console:
    """The console of progress and notes (stderr, no highlighting)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)


@contextmanager
def progress_bar() -> Iterator[Progress]:
    """A transient rich progress bar on stderr (spinner, description, bar, n/total, time)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr(),
        transient=True,
    )
    with progress:
        yield progress


STDOUT = "-"
"""``--json -``: the document goes to stdout (and the human-readable lines to stderr)."""


def to_stdout(json_file: Path | None) -> bool:
    """Whether ``--json`` names stdout (``-``)."""
    return json_file is not None and str(json_file) == STDOUT


def emit_json(json_file: Path, document: Any, console: Console) -> None:
    """Write ``document`` to ``json_file`` (strict JSON), or print it when it is ``-``."""
    from transformer_math.typed_json import dumps, write_json

    if to_stdout(json_file):
        typer.echo(dumps(document), nl=False)
        return
    write_output("--json file", json_file, lambda: write_json(document, json_file))
    console.print(f"wrote {json_file}", style="dim", markup=False)


def write_output(what: str, path: Path, write: Callable[[], Path]) -> Path:
    """``write()``, an ``OSError`` turned into a one-line usage error naming ``what``."""
    try:
        return write()
    except OSError as exc:
        raise UsageError(f"cannot write {what} {str(path)!r}: {exc.strerror or exc}") from None
