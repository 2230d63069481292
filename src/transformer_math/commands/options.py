"""What several ``tmath`` commands share: the choices, the option types and their checks (no
``register``: this module adds no command).

``verify``, ``list``, ``show``, ``margins`` and ``report`` take the same ``--tier``, ``-k``,
``--seed``, ``--seeds``, ``--size``, ``--lang`` and ``--threads``; their types live here once, so
that the help texts and the checks agree. ``--threads`` (default 1) is applied with
``diagnostics.timing.torch_threads``, a context manager: the process's count is restored
after the command's work, never changed for good. A bad choice or regular expression is a
``UsageError`` (one line ``tmath CMD: error: ...``, exit 2, by ``cli.TmathGroup``).

Imports only ``typer`` and the standard library, so ``tmath --help`` stays fast.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

try:  # typer vendors click from 0.2x on
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - older typer depends on click itself
    from click.exceptions import UsageError  # type: ignore[no-redef]

__all__ = [
    "LANGS", "SIZES", "TIERS", "JsonFileOption", "LangOption", "PatternOption", "SeedOption",
    "SeedsOption", "SizeOption", "ThreadsOption", "TierOption", "UsageError", "choice",
    "in_language", "json_file_option", "regex",
]

TIERS = ("quick", "full")
SIZES = ("tiny", "default", "large")
LANGS = ("en", "zh")  # transformer_math.i18n.LANGS (not imported here: --help stays light)


def choice(value: str, choices: Sequence[str], option: str) -> str:
    """``value`` if it is one of ``choices``; else a one-line usage error naming ``option``."""
    if value not in choices:
        raise UsageError(f"{option} must be one of {', '.join(choices)}; got {value!r}")
    return value


def regex(pattern: str | None) -> str | None:
    """``pattern`` if it compiles as a regular expression (``-k``); else a usage error."""
    if pattern is None:
        return None
    try:
        re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"-k {pattern!r} is not a valid regular expression: {exc}") from None
    return pattern


def in_language(claims: list[dict[str, Any]], lang: str) -> list[dict[str, Any]]:
    """Copies of claim entries whose statement (and notes) are in ``lang``, for the terminal."""
    if lang == "en":
        return claims
    from transformer_math import i18n

    return [{**c, "statement": i18n.statement(c, lang),
             "notes": [i18n.text(str(n), lang) for n in c.get("notes") or []]} for c in claims]


TierOption = Annotated[
    str,
    typer.Option(
        "--tier", metavar="quick|full", help="quick: the quick claims; full: every claim."
    ),
]
PatternOption = Annotated[
    str | None,
    typer.Option("-k", "--pattern",
                 help="Regular expression, case-insensitive, searched in claim id, topic, "
                 "source, statement, section (8.3.3) and project module (M2)."),
]
SeedOption = Annotated[int, typer.Option("--seed", min=0, help="Seed of every random draw.")]
SeedsOption = Annotated[
    int,
    typer.Option("--seeds", min=1,
                 help="Seeds a training claim runs: --seed, --seed + 1, ... (default 3)."),
]
LangOption = Annotated[
    str,
    typer.Option("--lang", metavar="en|zh",
                 help="Language of statements and of the HTML report: en or zh (Chinese)."),
]
def json_file_option(what: str) -> Any:
    """The ``--json FILE`` option of a command whose output is ``what`` (``-``: stdout, with
    the human-readable lines on stderr)."""
    return typer.Option("--json", help=f"Write {what} to this file ('-': to stdout, with the "
                        "tables on stderr).")


THREADS_HELP = ("torch intra-op threads while it runs (>= 1). Default 1: on a machine shared "
                "with other processes a second thread waits for a busy core (an ACT training "
                "step measured 68 ms with 2 threads vs 15 ms with 1 beside one busy process "
                "on 2 cores, benchmarks/act_threads.py).")
ThreadsOption = Annotated[int, typer.Option("--threads", help=THREADS_HELP)]
JsonFileOption = Annotated[Path | None, json_file_option("the results document")]
SizeOption = Annotated[
    str,
    typer.Option(
        "--size", metavar="tiny|default|large", help="Experiment size: tiny, default or large."
    ),
]


