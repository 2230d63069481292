"""``tmath bench``: side-by-side benchmarks, candidate/baseline ratios (exit 1 when a benchmark
with a target ratio misses it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from transformer_math.commands.args import MAX_REPEATS, integer, internal_work, output_file
from transformer_math.commands.options import UsageError, json_file_option, regex
from transformer_math.commands.output import emit_json, progress_bar, stderr, stdout, to_stdout

HELP_ORDER = 5
"""Place in ``tmath --help`` (``cli.register_extra_commands``)."""


def bench(
    json_file: Annotated[Path | None, json_file_option("the measurements")] = None,
    repeats: Annotated[
        int | None,
        typer.Option("--repeats", min=1, help="Timed repeats per benchmark (default: its own)."),
    ] = None,
    pattern: Annotated[
        str | None,
        typer.Option("-k", "--pattern", help="Regular expression matched against benchmark names."),
    ] = None,
) -> None:
    """Run side-by-side benchmarks and print candidate/baseline ratios.

    Speed is a ratio against a baseline run in the same process, never an absolute time.
    Exits 1 when a benchmark with a target ratio misses it.
    """
    pattern = regex(pattern)
    integer("--repeats", repeats, low=1, high=MAX_REPEATS)

    from transformer_math.bench.harness import (
        all_benchmarks,
        bench_environment,
        run_benchmark,
        select_benchmarks,
    )
    from transformer_math.report.table import bench_tables

    entries = select_benchmarks(all_benchmarks(), pattern)
    if not entries:
        raise UsageError(
            f"no benchmark matches -k {pattern!r}" if pattern else "no benchmarks registered"
        )
    if not to_stdout(json_file):
        output_file("--json", json_file, make_parents=True)  # before the benchmarks run
    results = []
    skipped: list[str] = []
    with progress_bar() as progress:
        task = progress.add_task("benchmarks", total=len(entries))
        for i, entry in enumerate(entries):
            progress.update(task, description=entry.name, completed=i)
            try:
                built = entry.build()
            except ImportError as exc:  # an optional reference library (e.g. transformers)
                skipped.append(f"{entry.name} ({exc})")
                continue
            with internal_work():
                results.append(run_benchmark(built, repeats=repeats))
        progress.update(task, completed=len(entries))
    rows = [r.to_json() for r in results]
    out = stderr() if to_stdout(json_file) else stdout()
    for table in bench_tables(rows):
        out.print(table)
    for line in skipped:
        out.print(f"skipped, optional dependency missing: {line}", style="yellow")
    missed = [r.name for r in results if r.met is False]
    if json_file is not None:
        document = {"benchmarks": rows, "environment": bench_environment()}
        emit_json(json_file, document, out)
    if missed:
        out.print(f"missed target: {', '.join(missed)}", style="bold red")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``tmath bench`` to ``app``."""
    app.command("bench")(bench)
