"""``tmath show ID``: run one claim and print everything about it (exit 1 when it fails)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from transformer_math.commands.args import MAX_SEED, MAX_SEEDS, MAX_THREADS, integer, internal_work
from transformer_math.commands.options import (
    LANGS,
    SIZES,
    LangOption,
    SeedOption,
    SeedsOption,
    SizeOption,
    ThreadsOption,
    UsageError,
    choice,
    in_language,
)
from transformer_math.commands.output import progress_bar, stdout

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.progress import Progress, TaskID

    from transformer_math.claims.registry import Claim, ClaimResult


HELP_ORDER = 2
"""Place in ``tmath --help`` (``cli.register_extra_commands``)."""


class _ClaimProgress:
    """Maps a check's progress fractions onto the overall bar (claim ``index`` of the run).

    With a falsifier the check runs twice; a fraction that falls back marks the second run, so
    the claim's slot fills as 0..1/2 for the check and 1/2..1 for the falsifier.
    """

    def __init__(self, progress: Progress, task: TaskID, index: int, two_runs: bool) -> None:
        self.progress, self.task, self.index, self.two_runs = progress, task, index, two_runs
        self.second_run = False
        self.last = 0.0

    def __call__(self, fraction: float) -> None:
        if self.two_runs and not self.second_run and fraction < self.last - 1e-9:
            self.second_run = True
        self.last = fraction
        if self.two_runs:
            fraction = (0.5 if self.second_run else 0.0) + 0.5 * fraction
        self.progress.update(self.task, completed=self.index + min(max(fraction, 0.0), 1.0))


def _run_claims(
    claims: Sequence[Claim], *, seed: int, size: str, threads: int, seeds: int = 3
) -> list[ClaimResult]:
    from transformer_math.claims.registry import Context, Size, run_claim
    from transformer_math.diagnostics.timing import torch_threads

    # The claims use small tensors: one intra-op thread is as fast on an idle machine and avoids
    # the slow-downs of threads waiting for busy cores when they are shared; the caller's
    # count is restored after (a context manager, no global change).
    results: list[ClaimResult] = []
    with torch_threads(threads), progress_bar() as progress:
        task = progress.add_task("verifying", total=len(claims))
        for i, c in enumerate(claims):
            progress.update(task, description=c.id, completed=i)
            tracker = _ClaimProgress(progress, task, i, two_runs=c.falsifier is not None)
            ctx = Context(seed=seed, size=Size(size), progress=tracker, seeds=seeds)
            results.append(run_claim(c, ctx))
        progress.update(task, completed=len(claims))
    return results


def show(
    claim_id: Annotated[
        str, typer.Argument(metavar="ID", help="Claim id, e.g. attention.causal-mask.")
    ],
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    seed: SeedOption = 0,
    seeds: SeedsOption = 3,
    size: SizeOption = "default",
    lang: LangOption = "en",
    threads: ThreadsOption = 1,
) -> None:
    """Run one claim and print everything about it (exit 1 when it fails).

    ``--lang zh`` prints the statement and the notes in Chinese where translations exist; the
    JSON is the same in every language.
    """
    size = choice(size, SIZES, "--size")
    lang = choice(lang, LANGS, "--lang")
    integer("--seed", seed, low=0, high=MAX_SEED)
    integer("--seeds", seeds, low=1, high=MAX_SEEDS)
    integer("--threads", threads, low=1, high=MAX_THREADS)

    from transformer_math.claims.registry import get_claim
    from transformer_math.commands._claim_views import claim_detail
    from transformer_math.report.results import to_jsonable
    from transformer_math.report.table import json_text

    try:
        c = get_claim(claim_id)
    except KeyError as exc:
        raise UsageError(str(exc.args[0]) if exc.args else f"no claim {claim_id!r}") from None
    with internal_work():
        (result,) = _run_claims([c], seed=seed, size=size, threads=threads, seeds=seeds)
    entry = to_jsonable(result.to_json())
    if json_output:
        typer.echo(json_text(entry))
    else:
        stdout().print(claim_detail(in_language([entry], lang)[0]))
    if result.problem:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``tmath show`` to ``app``."""
    app.command("show")(show)
