"""The ``tmath`` command: verify claims, list and show them, render reports, run benchmarks.

Commands (``tmath COMMAND --help`` for each):

- ``verify``: run the selected claims with their falsifiers; table, summary, ``--json``,
  ``--report``. Exit 0 when nothing failed, 1 when a claim failed or a falsifier was not caught.
- ``list``: the registered claims (nothing is run).
- ``show ID``: run one claim and print everything about it.
- ``report DIR``: render a saved ``--json`` run as HTML.
- ``bench``: side-by-side benchmarks; exit 1 when a benchmark misses its target ratio.
- extra commands (calculators) found in ``transformer_math/commands/`` (see that package).

Every user mistake (unknown tier or id, a ``-k`` pattern matching nothing, an invalid regular
expression, an unreadable results file, an unknown option, a number that is not finite or out of
its range, an output path whose folder is missing) prints one line to stderr,
``tmath CMD: error: ...``, and exits 2; numbers and output paths are checked before any work
(``commands/args.py``), and a result that would overflow is an error, never ``inf`` output.
A ``ValueError``, ``TypeError`` or ``OSError`` a command raises on user input is printed the
same way (see :data:`USER_INPUT_ERRORS`); any other exception is a bug and shows its traceback.
Exit 1 means "ran, but the result is negative" (a claim failed, a bug survived, a benchmark
missed its target). Claims, torch and matplotlib are imported only inside the
commands that need them, so ``tmath --help`` is fast.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

try:  # typer vendors click from 0.2x on
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - older typer depends on click itself
    from click.exceptions import ClickException, UsageError  # type: ignore[no-redef]

from transformer_math.commands.args import (
    MAX_REPEATS,
    MAX_SEED,
    MAX_SEEDS,
    MAX_THREADS,
    MAX_WORKERS,
    error_line,
    input_file,
    integer,
    internal_work,
    is_internal,
    number,
    output_file,
    output_folder,
    ray_address,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from transformer_math.claims.registry import Claim, ClaimResult

TIERS = ("quick", "full")
SIZES = ("tiny", "default", "large")
LANGS = ("en", "zh")  # transformer_math.i18n.LANGS (not imported here: --help stays light)


class TmathGroup(TyperGroup):
    """A typer group whose usage errors are one line on stderr (``tmath CMD: error: ...``)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(
                args=args,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        try:
            rv = super().main(
                args=args,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        except ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # bare `tmath`: the help text
                exc.show()
            else:
                _print_error(exc, prog_name or "tmath")
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("tmath: aborted", err=True)
            sys.exit(1)
        except USER_INPUT_ERRORS as exc:
            if is_internal(exc) or os.environ.get("TMATH_TRACEBACK"):
                raise
            where = " ".join([prog_name or "tmath", *self._command_name(args)])
            typer.echo(error_line(where, _one_line(exc), hint=False), err=True)
            sys.exit(2)
        sys.exit(rv if isinstance(rv, int) else 0)

    def _command_name(self, args: Sequence[str] | None) -> list[str]:
        """The subcommand named on the command line (``[]`` when there is none)."""
        words = list(sys.argv[1:] if args is None else args)
        name = next((w for w in words if w in self.commands), None)
        return [] if name is None else [name]


USER_INPUT_ERRORS: tuple[type[Exception], ...] = (ValueError, TypeError, OSError)
"""Exceptions that a command raises for a user's input and that ``tmath`` prints as one line
with exit 2: ``ValueError``/``TypeError`` are how the library refuses an argument (by the
project's convention they name it), ``OSError`` (``FileNotFoundError``, ``PermissionError``,
...) is the file system refusing a path the user gave. They count only outside
``commands.args.internal_work`` (claims, benchmarks and the bug zoo run inside it): there they
are bugs of ours. Every other exception (``RuntimeError``, ``AssertionError``, ``KeyError``,
``IndexError``, ``ZeroDivisionError``, ``RecursionError``, ``MemoryError``, ...) is a bug and
keeps its traceback; set ``TMATH_TRACEBACK=1`` to see the traceback of a refused input too."""


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror + (f": {str(exc.filename)!r}" if exc.filename is not None else "")
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _print_error(exc: ClickException, prog_name: str) -> None:
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else prog_name
    typer.echo(error_line(where, exc.format_message(), hint=isinstance(exc, UsageError)),
               err=True)


app = typer.Typer(
    name="tmath",
    cls=TmathGroup,
    help="The mathematics of Transformers, checked by running code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version_callback(value: bool) -> None:
    if value:
        from transformer_math import __version__

        typer.echo(f"transformer-math {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_version_callback,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """The mathematics of Transformers, checked by running code.

    `tmath verify` runs the claim registry; `tmath list` shows what it holds.
    """


# --- helpers ----------------------------------------------------------------------------------


def _choice(value: str, choices: Sequence[str], option: str) -> str:
    if value not in choices:
        raise UsageError(f"{option} must be one of {', '.join(choices)}; got {value!r}")
    return value


def _regex(pattern: str | None) -> str | None:
    if pattern is None:
        return None
    try:
        re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"-k {pattern!r} is not a valid regular expression: {exc}") from None
    return pattern


def _stdout() -> Console:
    from transformer_math.report.table import stdout_console

    return stdout_console()


def _stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


@contextmanager
def _progress_bar() -> Iterator[Progress]:
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
        console=_stderr(),
        transient=True,
    )
    with progress:
        yield progress


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
    import torch

    from transformer_math.claims.registry import Context, Size, run_claim

    # The claims use small tensors: one intra-op thread is as fast on an idle machine and avoids
    # the 10-40x slow-downs of spinning threads when the cores are shared.
    torch.set_num_threads(threads)
    results: list[ClaimResult] = []
    with _progress_bar() as progress:
        task = progress.add_task("verifying", total=len(claims))
        for i, c in enumerate(claims):
            progress.update(task, description=c.id, completed=i)
            tracker = _ClaimProgress(progress, task, i, two_runs=c.falsifier is not None)
            ctx = Context(seed=seed, size=Size(size), progress=tracker, seeds=seeds)
            results.append(run_claim(c, ctx))
        progress.update(task, completed=len(claims))
    return results


def _execute(claims: Sequence[Claim], settings: Any, *, workers: int, address: str | None,
             log: Any, profile: bool = False) -> tuple[list[ClaimResult], Any]:
    """Run ``claims`` as tasks (``transformer_math.execution``) with a bar counting tasks."""
    from transformer_math.execution.executors import execute

    with _progress_bar() as progress:
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


STDOUT = "-"
"""``--json -``: the document goes to stdout (and the human-readable lines to stderr)."""


def _to_stdout(json_file: Path | None) -> bool:
    return json_file is not None and str(json_file) == STDOUT


def _emit_json(json_file: Path, document: Any, console: Console) -> None:
    """Write ``document`` to ``json_file`` (strict JSON), or print it when it is ``-``."""
    from transformer_math.report.results import dumps, write_json

    if _to_stdout(json_file):
        typer.echo(dumps(document), nl=False)
        return
    _write("--json file", json_file, lambda: write_json(document, json_file))
    console.print(f"wrote {json_file}", style="dim", markup=False)


def _write(what: str, path: Path, write: Callable[[], Path]) -> Path:
    try:
        return write()
    except OSError as exc:
        raise UsageError(f"cannot write {what} {str(path)!r}: {exc.strerror or exc}") from None


# --- commands ---------------------------------------------------------------------------------

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
SizeOption = Annotated[
    str,
    typer.Option(
        "--size", metavar="tiny|default|large", help="Experiment size: tiny, default or large."
    ),
]


@app.command()
def verify(
    tier: TierOption = "quick",
    pattern: PatternOption = None,
    seed: SeedOption = 0,
    seeds: SeedsOption = 3,
    size: SizeOption = "default",
    json_file: Annotated[
        Path | None, typer.Option(
            "--json", help="Write the results document to this file ('-': to stdout, with the "
                           "table on stderr).")
    ] = None,
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
    tier = _choice(tier, TIERS, "--tier")
    size = _choice(size, SIZES, "--size")
    lang = _choice(lang, LANGS, "--lang")
    pattern = _regex(pattern)
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
        _stderr().print(f"no claims of tier {tier!r} are registered")
    if not _to_stdout(json_file):
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
    document = build_results(results, seed=seed, tier=tier, size=size, pattern=pattern,
                             seeds=seeds, run=info.to_json() if info is not None else None)

    out = _stderr() if _to_stdout(json_file) else _stdout()
    if results:
        out.print(results_table(document["claims"]))
    out.print(summary_text(document["summary"]))
    for note in (info.notes if info is not None else []):
        out.print(note, style="dim")
    for line in problem_lines(document["claims"]):
        out.print(line)
    if profile and results:
        from transformer_math.report.table import timing_table

        out.print(timing_table(document["claims"], document.get("run")))
    if json_file is not None:
        _emit_json(json_file, document, out)
    if report_dir is not None:
        from transformer_math.report.html import render_report

        index = _write("--report folder", report_dir,
                       lambda: render_report(document, report_dir, lang=lang))
        out.print(f"wrote {index}", style="dim", markup=False)
    if any(r.problem for r in results):
        raise typer.Exit(1)


@app.command("list")
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
) -> None:
    """List the registered claims: id, tier, topic, source, falsifier, statement.

    ``--lang zh`` shows the statements in Chinese (English where no translation exists); the
    JSON carries both (``statement``, ``statement_zh``) whatever the language.
    """
    if tier is not None:
        tier = _choice(tier, TIERS, "--tier")
    lang = _choice(lang, LANGS, "--lang")
    pattern = _regex(pattern)

    from transformer_math.claims.registry import all_claims, select_claims
    from transformer_math.report.results import claim_to_json
    from transformer_math.report.table import claims_list_table, json_text

    claims = [claim_to_json(c) for c in select_claims(all_claims(), tier=tier, pattern=pattern)]
    if pattern and not claims:
        raise UsageError(f"no claim matches -k {pattern!r}")
    if json_output:
        typer.echo(json_text({"claims": claims}))
        return
    out = _stdout()
    out.print(claims_list_table(_in_language(claims, lang)))
    kinds: dict[str, int] = {}
    for c in claims:
        kinds[str(c.get("kind"))] = kinds.get(str(c.get("kind")), 0) + 1
    errors = sum(len(c.get("refutes") or []) for c in claims if c.get("kind") != "model")
    modelled = sum(len(c.get("refutes") or []) for c in claims if c.get("kind") == "model")
    by_kind = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    out.print(f"{len(claims)} claims ({by_kind}); {errors} distinct seed errors expected "
              f"refuted by running code" + (f", {modelled} by an analytic model" if modelled
                                             else ""), style="dim")


@app.command()
def show(
    claim_id: Annotated[
        str, typer.Argument(metavar="ID", help="Claim id, e.g. attention.causal-mask.")
    ],
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    seed: SeedOption = 0,
    seeds: SeedsOption = 3,
    size: SizeOption = "default",
    lang: LangOption = "en",
) -> None:
    """Run one claim and print everything about it (exit 1 when it fails).

    ``--lang zh`` prints the statement and the notes in Chinese where translations exist; the
    JSON is the same in every language.
    """
    size = _choice(size, SIZES, "--size")
    lang = _choice(lang, LANGS, "--lang")
    integer("--seed", seed, low=0, high=MAX_SEED)
    integer("--seeds", seeds, low=1, high=MAX_SEEDS)

    from transformer_math.claims.registry import get_claim
    from transformer_math.report.results import to_jsonable
    from transformer_math.report.table import claim_detail, json_text

    try:
        c = get_claim(claim_id)
    except KeyError as exc:
        raise UsageError(str(exc.args[0]) if exc.args else f"no claim {claim_id!r}") from None
    with internal_work():
        (result,) = _run_claims([c], seed=seed, size=size, threads=1, seeds=seeds)
    entry = to_jsonable(result.to_json())
    if json_output:
        typer.echo(json_text(entry))
    else:
        _stdout().print(claim_detail(_in_language([entry], lang)[0]))
    if result.problem:
        raise typer.Exit(1)


def _in_language(claims: list[dict[str, Any]], lang: str) -> list[dict[str, Any]]:
    """Copies of claim entries whose statement (and notes) are in ``lang``, for the terminal."""
    if lang == "en":
        return claims
    from transformer_math import i18n

    return [{**c, "statement": i18n.statement(c, lang),
             "notes": [i18n.text(str(n), lang) for n in c.get("notes") or []]} for c in claims]


def _seed_list(text: str) -> list[int]:
    """``"0-4"`` -> [0, 1, 2, 3, 4]; ``"0,3,7"`` -> [0, 3, 7]."""
    seeds: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d{1,20})\s*(?:-\s*(\d{1,20})\s*)?", part)
        if m is None or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise UsageError(f"--seeds must look like '0-4' or '0,3,7', got {text!r}")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi > MAX_SEED or len(seeds) + hi - lo + 1 > MAX_SEEDS:
            raise UsageError(f"--seeds must name at most {MAX_SEEDS} seeds, each <= {MAX_SEED}, "
                             f"got {text!r}")
        seeds.extend(range(lo, hi + 1))
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds must name at least two distinct seeds, got {text!r}")
    return seeds


@app.command()
def margins(
    tier: TierOption = "quick",
    pattern: PatternOption = None,
    seeds: Annotated[
        str, typer.Option("--seeds", help="Seeds to sweep, e.g. 0-4 or 0,3,7.")
    ] = "0-4",
    size: SizeOption = "tiny",
    factor: Annotated[
        float, typer.Option("--factor", help="Required min slack / spread between seeds.")
    ] = 3.0,
    json_file: Annotated[
        Path | None, typer.Option(
            "--json", help="Write the sweep as JSON to this file ('-': to stdout).")
    ] = None,
) -> None:
    """Run claims for several seeds; is every pass condition's slack >= FACTOR x its spread?

    Exits 0 when every claim is firm, 1 otherwise.
    """
    tier = _choice(tier, TIERS, "--tier")
    size = _choice(size, SIZES, "--size")
    pattern = _regex(pattern)
    seed_list = _seed_list(seeds)
    factor = number("--factor", factor, low=0, low_open=True)
    if not _to_stdout(json_file):
        output_file("--json", json_file)  # before the sweep runs

    import torch

    from transformer_math.claims.margins import sweep
    from transformer_math.claims.registry import Size, all_claims, select_claims

    claims = select_claims(all_claims(), tier=tier, pattern=pattern)
    if not claims:
        raise UsageError(f"no claim of tier {tier!r} matches -k {pattern!r} (see 'tmath list')")
    torch.set_num_threads(1)
    out = _stderr() if _to_stdout(json_file) else _stdout()
    with internal_work():
        spreads = sweep(claims, seed_list, size=Size(size))
    for sp in spreads:
        out.print(f"{'firm ' if sp.firm(factor) else 'WEAK '} {sp.claim_id}  "
                  f"verdicts {','.join(sorted(set(sp.verdicts)))}"
                  + ("" if not sp.problems else f"  problems: {'; '.join(sp.problems)}"),
                  highlight=False)
        for m in sp.margins:
            ratio = "inf" if m.spread == 0 else f"{m.min_slack / m.spread:.3g}"
            out.print(f"    {'ok ' if m.firm(factor) else 'NO '} {m.name}: {m.sense} "
                      f"{m.threshold:.4g}; values {[float(f'{v:.4g}') for v in m.values]}; "
                      f"min slack {m.min_slack:.4g}, spread {m.spread:.3g}, ratio {ratio}",
                      highlight=False)
    weak = [sp.claim_id for sp in spreads if not sp.firm(factor)]
    out.print(f"{len(spreads) - len(weak)}/{len(spreads)} claims firm over seeds {seeds} "
              f"(size {size}, factor {factor:g})", highlight=False)
    if json_file is not None:
        doc = {"seeds": seed_list, "size": size, "factor": factor,
               "claims": [sp.to_json(factor) for sp in spreads]}
        _emit_json(json_file, doc, out)
    if weak:
        raise typer.Exit(1)


@app.command()
def report(
    out_dir: Annotated[Path, typer.Argument(metavar="DIR", help="Folder of the report.")],
    from_file: Annotated[
        Path | None,
        typer.Option("--from", help="Results document to render (default DIR/results.json)."),
    ] = None,
    lang: LangOption = "en",
) -> None:
    """Render a saved `tmath verify --json` run as an HTML report in DIR (--lang zh: Chinese)."""
    lang = _choice(lang, LANGS, "--lang")
    from transformer_math.report.html import render_report
    from transformer_math.report.results import read_results

    source = from_file if from_file is not None else out_dir / "results.json"
    try:
        document = read_results(source)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    output_folder("report folder", out_dir)
    index = _write("report folder", out_dir,
                   lambda: render_report(document, out_dir, lang=lang))
    _stdout().print(f"wrote {index}", markup=False)


@app.command()
def bench(
    json_file: Annotated[
        Path | None, typer.Option(
            "--json", help="Write the measurements to this file ('-': to stdout, with the "
                           "tables on stderr).")
    ] = None,
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
    pattern = _regex(pattern)
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
    if not _to_stdout(json_file):
        output_file("--json", json_file, make_parents=True)  # before the benchmarks run
    results = []
    skipped: list[str] = []
    with _progress_bar() as progress:
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
    out = _stderr() if _to_stdout(json_file) else _stdout()
    for table in bench_tables(rows):
        out.print(table)
    for line in skipped:
        out.print(f"skipped, optional dependency missing: {line}", style="yellow")
    missed = [r.name for r in results if r.met is False]
    if json_file is not None:
        document = {"benchmarks": rows, "environment": bench_environment()}
        _emit_json(json_file, document, out)
    if missed:
        out.print(f"missed target: {', '.join(missed)}", style="bold red")
        raise typer.Exit(1)


# --- extra commands ---------------------------------------------------------------------------


def register_extra_commands(
    target: typer.Typer, package: str = "transformer_math.commands"
) -> list[str]:
    """Import every module of ``package`` and call its ``register(target)`` when it has one.

    Returns the names of the modules that registered something. Modules whose name starts with
    ``_`` are skipped; see ``transformer_math/commands/__init__.py`` for the rules.
    """
    pkg = importlib.import_module(package)
    registered: list[str] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(target)
            registered.append(info.name)
    return registered


register_extra_commands(app)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``tmath`` (``argv`` defaults to ``sys.argv[1:]``); exits the process."""
    app(args=list(argv) if argv is not None else None, prog_name="tmath")


if __name__ == "__main__":
    main()
