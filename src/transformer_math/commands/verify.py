"""``tmath verify``: run the selected claims with their falsifiers; table, summary, ``--json``,
``--report``.

A run is a set of tasks (:mod:`transformer_math.execution`), one per (claim, seed) of a training
claim and one per other claim, run here or on Ray (``--workers``, ``--address``) and kept in a
crash-safe log (``--log``, ``--resume``). Exit 0 when nothing failed, 1 when a claim failed,
obtained a verdict other than the one it expects, or a falsifier was not caught.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from transformer_math.commands.args import (
    MAX_SEED,
    MAX_SEEDS,
    MAX_THREADS,
    MAX_WORKERS,
    input_file,
    integer,
    internal_work,
    output_file,
    output_folder,
    ray_address,
)
from transformer_math.commands.options import (
    LANGS,
    SIZES,
    TIERS,
    JsonFileOption,
    LangOption,
    PatternOption,
    SeedOption,
    SeedsOption,
    SizeOption,
    TierOption,
    UsageError,
    choice,
    regex,
)
from transformer_math.commands.output import (
    emit_json,
    progress_bar,
    stderr,
    stdout,
    to_stdout,
    write_output,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from transformer_math.claims.registry import Claim, ClaimResult


HELP_ORDER = 0
"""Place in ``tmath --help`` (``cli.register_extra_commands``)."""


def _execute(claims: Sequence[Claim], settings: Any, *, workers: int, address: str | None,
             log: Any, profile: bool = False) -> tuple[list[ClaimResult], Any]:
    """Run ``claims`` as tasks (``transformer_math.execution``) with a bar counting tasks."""
    from transformer_math.execution.executors import execute

    with progress_bar() as progress:
        where = "inline" if workers == 1 and address is None else (
            f"ray, {workers} workers" if address is None else f"ray at {address}")
        task = progress.add_task(f"verifying ({where})", total=None)

        def done(key: Any, n: int, total: int) -> None:
            progress.update(task, description=f"{key.label()} ({where})", completed=n,
                            total=total)

        return execute(claims, settings, workers=workers, address=address, log=log,
                       progress=done, profile=profile)


def _open_log(log_file: Path | None, resume: Path | None, settings: Any,
              claims: Sequence[Claim]) -> Any:
    """The results log of ``--log FILE`` (new) or ``--resume FILE`` (continued), or None."""
    from transformer_math.claims.registry import all_claims
    from transformer_math.execution.log import LogError, ResultsLog

    if log_file is not None and resume is not None:
        raise UsageError("give --log FILE (a new log) or --resume FILE (continue one), not both")
    try:
        if resume is not None:
            input_file("--resume", resume)
            return ResultsLog.open(resume, settings, {c.id: c.version for c in all_claims()})
        if log_file is not None:
            output_file("--log", log_file, make_parents=True)
            return ResultsLog.create(log_file, settings)
    except LogError as exc:
        raise UsageError(str(exc)) from None
    return None


def verify(
    tier: TierOption = "quick",
    pattern: PatternOption = None,
    seed: SeedOption = 0,
    seeds: SeedsOption = 3,
    size: SizeOption = "default",
    json_file: JsonFileOption = None,
    report_dir: Annotated[
        Path | None,
        typer.Option("--report", help="Write the HTML report (and results.json) into this folder."),
    ] = None,
    threads: Annotated[
        int, typer.Option("--threads", help="torch intra-op threads while claims run (>= 1).")
    ] = 1,
    lang: LangOption = "en",
    workers: Annotated[
        int, typer.Option("--workers", help="Tasks run at a time: 1 runs them here, one after "
                          "another; more run them as Ray tasks on a local Ray started now.")
    ] = 1,
    address: Annotated[
        str | None, typer.Option("--address", help="Run the tasks on the Ray cluster at this "
                                 "address (HOST:PORT, ray://HOST:PORT or auto).")
    ] = None,
    log_file: Annotated[
        Path | None, typer.Option("--log", help="Append every finished task to this new file "
                                  "(JSON lines, crash-safe; continue it with --resume).")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option("--resume", help="Continue the results log FILE: skip the "
                                  "(claim, seed) tasks it holds, append the others.")
    ] = None,
    profile: Annotated[
        bool, typer.Option("--profile", help="Split each claim's time into check and "
                           "falsifier, training and evaluation, and print where it went.")
    ] = False,
) -> None:
    """Run claims with their falsifiers and print a table of verdicts.

    A run is a set of tasks, one per (claim, seed) of a training claim and one per other
    claim; ``--workers`` and ``--address`` run them on Ray, ``--log`` and ``--resume`` keep
    them in a crash-safe log. Exits 0 when nothing failed, 1 when a claim failed, obtained a
    verdict other than the one it expects, or a falsifier (a bug planted in the library) was
    not caught.
    """
    tier = choice(tier, TIERS, "--tier")
    size = choice(size, SIZES, "--size")
    lang = choice(lang, LANGS, "--lang")
    pattern = regex(pattern)
    integer("--seed", seed, low=0, high=MAX_SEED)
    integer("--seeds", seeds, low=1, high=MAX_SEEDS)
    integer("--threads", threads, low=1, high=MAX_THREADS)
    integer("--workers", workers, low=1, high=MAX_WORKERS)
    address = ray_address("--address", address)

    from transformer_math.claims.registry import all_claims, select_claims
    from transformer_math.execution.executors import ExecutorError
    from transformer_math.execution.log import LogError
    from transformer_math.execution.tasks import RunSettings
    from transformer_math.report.results import build_results
    from transformer_math.report.table import problem_lines, results_table, summary_text

    claims = select_claims(all_claims(), tier=tier, pattern=pattern)
    if not claims:
        if pattern:
            raise UsageError(f"no claim of tier {tier!r} matches -k {pattern!r} (see 'tmath list')")
        stderr().print(f"no claims of tier {tier!r} are registered")
    if not to_stdout(json_file):
        output_file("--json", json_file, make_parents=True)  # before the claims run
    output_folder("--report", report_dir)
    settings = RunSettings(seed=seed, seeds=seeds, size=size, threads=threads)
    log = _open_log(log_file, resume, settings, claims)
    try:
        with internal_work():  # claims run on validated input: a ValueError here is ours
            results, info = (_execute(claims, settings, workers=workers, address=address,
                                      log=log, profile=profile) if claims else ([], None))
    except (ExecutorError, LogError) as exc:  # LogError: an append failed (a full disk)
        raise UsageError(str(exc)) from None
    from transformer_math.report.left_out import left_out, left_out_text

    skipped = left_out(all_claims(), claims, tier=tier, pattern=pattern)
    document = build_results(results, seed=seed, tier=tier, size=size, pattern=pattern,
                             seeds=seeds, run=info.to_json() if info is not None else None,
                             left_out=skipped)

    out = stderr() if to_stdout(json_file) else stdout()
    if results:
        out.print(results_table(document["claims"]))
    out.print(summary_text(document["summary"]))
    if skipped["total"]:
        from transformer_math import i18n

        out.print(left_out_text(skipped, lambda key, **v: i18n.ui(key, "en", **v)),
                  style="dim", markup=False)
    for note in (info.notes if info is not None else []):
        out.print(note, style="dim")
    for line in problem_lines(document["claims"]):
        out.print(line)
    if profile and results:
        from transformer_math.report.table import timing_table

        out.print(timing_table(document["claims"], document.get("run")))
    if json_file is not None:
        emit_json(json_file, document, out)
    if report_dir is not None:
        from transformer_math.report.html import render_report

        index = write_output("--report folder", report_dir,
                       lambda: render_report(document, report_dir, lang=lang))
        out.print(f"wrote {index}", style="dim", markup=False)
    if any(r.problem for r in results):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``tmath verify`` to ``app``."""
    app.command("verify")(verify)
