"""``tmath mutants``: the bug zoo against the claims; which claims kill which planted bug.

Every bug declared in the library (``transformer_math.bugs``) is planted in turn and the claims
whose clean run passed its site are run with it (``claims/mutants.py``). The table lists, per
bug, how many claims reach it and which of them kill it; exit 1 when a bug survives every claim
(a missing claim). Examples::

    tmath mutants                          # quick tier, size tiny, the whole kill matrix
    tmath mutants --first-kill             # stop each bug at its first kill (what CI runs)
    tmath mutants --bug '^rope\\.' -k position --json zoo.json
    tmath mutants --tier full --seeds 1    # training claims too
    tmath mutants --doctor --bug '^rope\\.'  # the doctor's checks against the engine bugs

With ``--doctor`` the zoo is planted in the project's engine and the doctor's checks are the
killers (``doctor/zoo.py``): per bug, the zoo models that reach its site and the checks that
flag it there; exit 1 when an engine bug the zoo reaches is flagged by no check.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from transformer_math import safe_write
from transformer_math.commands.args import (
    MAX_SEED,
    MAX_SEEDS,
    MAX_THREADS,
    integer,
    internal_work,
    output_file,
)
from transformer_math.commands.args import fail as _fail


def _regex(option: str, pattern: str | None) -> str | None:
    if pattern is None:
        return None
    try:
        re.compile(pattern)
    except re.error as exc:
        _fail(f"{option} is not a valid regular expression ({exc}): {pattern!r}")
    return pattern


def mutants(
    tier: str = typer.Option("quick", "--tier", metavar="quick|full",
                             help="quick: the quick claims; full: every claim."),
    pattern: str | None = typer.Option(None, "-k", "--pattern",
                                       help="Regular expression: claims (id or topic) to use."),
    bug_pattern: str | None = typer.Option(None, "--bug",
                                           help="Regular expression: bugs to plant."),
    size: str = typer.Option("tiny", "--size", metavar="tiny|default|large",
                             help="Experiment size of every claim run."),
    seed: int = typer.Option(0, "--seed", help="Seed of every random draw (>= 0)."),
    seeds: int = typer.Option(1, "--seeds", help="Seeds a training claim runs (>= 1)."),
    first_kill: bool = typer.Option(False, "--first-kill",
                                    help="Stop each bug at the first claim that kills it."),
    every_claim: bool = typer.Option(False, "--every-claim",
                                     help="Run every claim, not only those reaching the bug."),
    json_file: Annotated[Path | None, typer.Option(
        "--json", help="Write the kill matrix as JSON.")] = None,
    threads: int = typer.Option(1, "--threads", help="torch intra-op threads (>= 1)."),
    doctor: bool = typer.Option(False, "--doctor",
                                help="Test the doctor instead of the claims: which doctor "
                                     "checks flag each engine bug on the zoo models."),
    doctor_checks: Annotated[list[str] | None, typer.Option(
        "--check", help="With --doctor: glob on doctor check names (repeatable).")] = None,
    doctor_models: Annotated[list[str] | None, typer.Option(
        "--model", help="With --doctor: zoo model to use (repeatable; default all).")] = None,
) -> None:
    """Plant every bug of the zoo and show which claims kill it (exit 1 if one survives).

    With --doctor: plant every engine bug and show which `tmath doctor` checks flag it on the
    doctor's zoo models (exit 1 if an engine bug the zoo reaches is flagged by no check).
    """
    if doctor:
        _doctor_matrix(bug_pattern, json_file, seed=seed, threads=threads,
                       first_flag=first_kill, checks=doctor_checks, models=doctor_models)
        return
    if doctor_checks or doctor_models:
        _fail("--check and --model need --doctor")
    if tier not in ("quick", "full"):
        _fail(f"--tier must be one of quick, full; got {tier!r}")
    if size not in ("tiny", "default", "large"):
        _fail(f"--size must be one of tiny, default, large; got {size!r}")
    integer("--seed", seed, low=0, high=MAX_SEED)
    integer("--seeds", seeds, low=1, high=MAX_SEEDS)
    integer("--threads", threads, low=1, high=MAX_THREADS)
    pattern = _regex("-k", pattern)
    bug_pattern = _regex("--bug", bug_pattern)
    output_file("--json", json_file)

    from transformer_math.claims.mutants import run_zoo, select_bugs
    from transformer_math.claims.registry import Context, Size, all_claims, select_claims
    from transformer_math.diagnostics.timing import torch_threads

    claims = select_claims(all_claims(), tier=tier, pattern=pattern)
    if not claims:
        _fail(f"no claim of tier {tier!r} matches -k {pattern!r}")
    zoo = select_bugs(bug_pattern)
    if not zoo:
        _fail(f"no bug matches --bug {bug_pattern!r}")

    def step(bug: str, claim_id: str) -> None:
        sys.stderr.write(f"\r\033[K{bug} <- {claim_id}")
        sys.stderr.flush()

    # a ValueError from here on is ours: keep its traceback; the thread count is restored after
    with internal_work(), torch_threads(threads):
        report = run_zoo(claims, zoo, Context(seed=seed, size=Size(size), seeds=seeds),
                         first_kill=first_kill, every_claim=every_claim,
                         on_step=step if sys.stderr.isatty() else None)
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    out = sys.stdout
    width = max(len(r.bug.name) for r in report.rows)
    out.write(f"{'bug':<{width}}  reach  kills  killed by\n")
    for row in report.rows:
        killers = row.ids("killed")
        shown = ", ".join(killers[:4]) + (f", +{len(killers) - 4}" if len(killers) > 4 else "")
        mark = shown if killers else (f"test {row.bug.test}" if row.bug.test else "SURVIVES")
        crashed = row.ids("crashed")
        if crashed:
            mark += f"  (crashed: {', '.join(crashed[:3])})"
        out.write(f"{row.bug.name:<{width}}  {len(row.reached_by):>5}  {len(killers):>5}  "
                  f"{mark}\n")
    s = report.summary()
    out.write(f"{s['killed']}/{s['bugs']} bugs killed by {len(claims)} {tier}-tier claims "
              f"({s['claim_runs']} planted runs, {s['seconds']:.1f} s"
              f"{', first kill only' if first_kill else ''})\n")
    if s["unhealthy_claims"]:
        out.write("claims failing without any bug (not used): "
                  f"{', '.join(s['unhealthy_claims'])}\n")
    for name in s["survivors"]:
        out.write(f"SURVIVES {name}: no {tier}-tier claim catches it\n")
    if json_file is not None:
        doc = {"tier": tier, "size": size, "seed": seed, "seeds": seeds,
               "pattern": pattern, "bug_pattern": bug_pattern, **report.to_json()}
        try:
            safe_write.write_text(json_file, json.dumps(doc, indent=2) + "\n")
        except OSError as exc:
            _fail(f"cannot write --json file {str(json_file)!r}: {exc.strerror or exc}")
        out.write(f"wrote {json_file}\n")
    if s["survivors"] or s["unhealthy_claims"]:
        raise typer.Exit(1)


def _doctor_matrix(bug_pattern: str | None, json_file: Path | None, *, seed: int,
                   threads: int, first_flag: bool, checks: list[str] | None,
                   models: list[str] | None) -> None:
    """``tmath mutants --doctor``: the doctor's flagging matrix (``doctor/zoo.py``)."""
    integer("--seed", seed, low=0, high=2**32 - 1)
    integer("--threads", threads, low=1, high=MAX_THREADS)
    bug_pattern = _regex("--bug", bug_pattern)
    output_file("--json", json_file)

    from transformer_math.diagnostics.timing import torch_threads
    from transformer_math.doctor import select_checks
    from transformer_math.doctor.zoo import ZOO_MODELS, doctor_matrix, matrix_lines

    known = [m.name for m in ZOO_MODELS]
    for name in models or []:
        if name not in known:
            _fail(f"--model {name!r} is not a zoo model; known: {', '.join(known)}")
    try:
        select_checks(checks)
    except ValueError as exc:
        _fail(str(exc))

    def step(bug: str, model: str) -> None:
        sys.stderr.write(f"\r\033[K{bug} <- {model}")
        sys.stderr.flush()

    with internal_work(), torch_threads(threads):
        matrix = doctor_matrix(bug_pattern, models or None, checks=checks or None, seed=seed,
                               first_flag=first_flag,
                               on_step=step if sys.stderr.isatty() else None)
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    out = sys.stdout
    for line in matrix_lines(matrix):
        out.write(line + "\n")
    if json_file is not None:
        doc = {"seed": seed, "bug_pattern": bug_pattern, "checks": checks, "models": models,
               "first_flag": first_flag, **matrix.to_json()}
        try:
            safe_write.write_text(json_file, json.dumps(doc, indent=2) + "\n")
        except OSError as exc:
            _fail(f"cannot write --json file {str(json_file)!r}: {exc.strerror or exc}")
        out.write(f"wrote {json_file}\n")
    if matrix.missed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``mutants`` to the ``tmath`` application."""
    app.command("mutants")(mutants)
