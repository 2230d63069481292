"""``tmath sweep``: run one experiment over a grid of config values and seeds, store the rows.

Every (grid point, seed) is one task: the experiment's ``--size`` preset for the seed with the
point's fields replaced. ``--grid NAME=V1,V2,...`` (repeatable) sets a config field (values
parsed by the field's type: int, float, ``true``/``false``, text, and for a tuple field the
elements separated by ``;``, a single number ``8`` meaning ``(8,)``); the points are the
cartesian product. ``--workers 1`` without ``--address`` runs the tasks here one after another;
otherwise they are Ray tasks (a local Ray with ``--workers`` CPUs, or the cluster at
``--address``), with the same numbers seed by seed. ``--out DIR`` receives ``rows.jsonl`` (one
line per finished task, crash-safe), ``results.parquet``, ``sweep.json`` and ``sweep.png``
(``transformer_math.execution.sweep``). Examples::

    tmath sweep --list
    tmath sweep icl_gd --grid steps=100,300 --seeds 3 --size tiny --out runs/icl_gd
    tmath sweep task_diversity --grid num_tasks=2,4,8,16,32,64,128,256,512,1024 --seeds 4 \\
        --size default --workers 8 --out runs/td        # Raventos et al. 2023, scaled down
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from transformer_math.commands.args import (
    MAX_SEEDS,
    MAX_THREADS,
    MAX_WORKERS,
    fail,
    integer,
    internal_work,
    json_text,
    output_folder,
    ray_address,
)

SIZES = ("tiny", "default", "large")
MAX_SWEEP_SEED = 2**32 - 1
"""Largest seed of a sweep: experiments derive their generators' seeds from it by products
(task_diversity: seed * 1000003 + M), which must stay within torch's 64-bit seeds."""


def sweep(
    experiment: Annotated[str | None, typer.Argument(
        metavar="EXPERIMENT", help="Experiment to sweep (see --list).")] = None,
    grid: Annotated[list[str] | None, typer.Option(
        "--grid", metavar="NAME=V1,V2,...",
        help="Config field and its values (repeatable; tuple elements separated by ';').")
    ] = None,
    seeds: Annotated[int, typer.Option(
        "--seeds", help="Seeds per grid point: --seed, --seed + 1, ...")] = 1,
    seed: Annotated[int, typer.Option("--seed", help="First seed.")] = 0,
    size: Annotated[str, typer.Option(
        "--size", metavar="tiny|default|large",
        help="The experiment's preset that the grid modifies.")] = "default",
    workers: Annotated[int, typer.Option(
        "--workers", help="Tasks run at a time: 1 runs them here; more run them as Ray tasks "
        "on a local Ray started now.")] = 1,
    address: Annotated[str | None, typer.Option(
        "--address", help="Run the tasks on the Ray cluster at this address (HOST:PORT, "
        "ray://HOST:PORT or auto).")] = None,
    threads: Annotated[int, typer.Option(
        "--threads", help="torch intra-op threads of every task.")] = 1,
    out: Annotated[str | None, typer.Option(
        "--out", metavar="DIR",
        help="Folder of rows.jsonl, results.parquet, sweep.json and sweep.png.")] = None,
    list_experiments: Annotated[bool, typer.Option(
        "--list", help="List the experiments and their fields.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print sweep.json (with --list: the list) as JSON.")] = False,
) -> None:
    """Sweep an experiment over a grid of config values and seeds (Parquet rows, a figure)."""
    if list_experiments or experiment is None:
        _print_list(as_json)
        return
    seeds = integer("--seeds", seeds, low=1, high=MAX_SEEDS)
    seed = integer("--seed", seed, low=0, high=MAX_SWEEP_SEED - seeds + 1)
    workers = integer("--workers", workers, low=1, high=MAX_WORKERS)
    threads = integer("--threads", threads, low=1, high=MAX_THREADS)
    address = ray_address("--address", address)
    if size not in SIZES:
        fail(f"--size must be one of {', '.join(SIZES)}, got {size!r}")
    if out is None:
        fail("--out DIR is required (the folder the rows, table and figure go to)")
    plan = _plan(experiment, grid or [], size=size, seed=seed, seeds=seeds)
    folder = output_folder("--out", out)
    assert folder is not None
    run = _run(plan, folder, workers=workers, address=address, threads=threads)
    _report(run, folder, as_json)


def _plan(experiment: str, grid: list[str], **kwargs: Any) -> Any:
    from transformer_math.execution.sweep import SweepError, plan_sweep

    try:
        return plan_sweep(experiment, grid, **kwargs)
    except SweepError as exc:
        fail(str(exc))


def _run(plan: Any, folder: Any, *, workers: int, address: str | None, threads: int) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from transformer_math.execution.executors import ExecutorError
    from transformer_math.execution.sweep import run_sweep

    total = len(plan.tasks)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("tasks, {task.fields[workers]} worker(s)"), TimeElapsedColumn(),
                   console=Console(stderr=True, highlight=False), transient=True)
    with bar:
        task = bar.add_task(plan.experiment, total=total, workers=workers)
        try:
            with internal_work():
                return run_sweep(plan, folder, workers=workers, address=address,
                                 threads=threads,
                                 progress=lambda done, _: bar.update(task, completed=done))
        except ExecutorError as exc:
            fail(f"--workers/--address: {exc}")


def _report(run: Any, folder: Any, as_json: bool) -> None:
    from transformer_math.execution.sweep import summary

    document = summary(run)
    if as_json:
        typer.echo(json_text(document, indent=1))
        return
    from rich.table import Table

    from transformer_math.report.table import stdout_console

    plan = run.plan
    table = Table(title=f"{plan.experiment} ({plan.size}): {len(run.rows)} tasks, "
                  f"{run.executor}, {run.wall_seconds:.1f} s", title_justify="left")
    table.add_column("point")
    for metric in run.metrics:
        table.add_column(metric, justify="right")
    for entry in document["by_point"]:
        cells = [_mean_std(entry["stats"][m]) for m in run.metrics]
        table.add_row(entry["label"], *cells)
    stdout_console().print(table)
    files = ", ".join(document["files"].values())
    typer.echo(f"wrote {files} in {folder}")


def _mean_std(stats: dict[str, Any]) -> str:
    if stats["mean"] is None:
        return "-"
    return f"{stats['mean']:.4g} ± {stats['std']:.2g}"


def _print_list(as_json: bool) -> None:
    from transformer_math.experiments.sweeps import describe

    experiments = describe()
    if as_json:
        typer.echo(json_text(experiments, indent=1))
        return
    out = sys.stdout
    for e in experiments:
        out.write(f"{e['name']}  ({e['source']})\n  {e['summary']}\n  seed: {e['seed_field']} "
                  f"(--seed, --seeds)\n  fields: ")
        out.write(", ".join(f"{k}: {v}" for k, v in e["fields"].items()) + "\n")


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to the ``tmath`` application."""
    app.command("sweep")(sweep)
