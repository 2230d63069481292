"""``tmath doctor PATH``: the seed's troubleshooting manual (000:1664-1673) run on a checkpoint.

Runs the registered doctor checks (``transformer_math.doctor``: static checks on the config and
the safetensors headers, dynamic probes through an engine) on a Hugging Face checkpoint
directory and prints one row per finding (check, severity, subject, measured vs threshold,
summary), then what each flagged finding means, how to fix it and its source, then a summary
line. Exit 0 when no finding is a warning or an error, 1 when one is, 2 on bad usage (a path
that is not a checkpoint directory, an option out of range, a ``--check`` pattern matching no
check, ``--engine transformers`` without ``transformers`` installed): one line
``tmath doctor: error: ...``, no traceback. Options are checked before anything is loaded.

Examples::

    tmath doctor ./my-llama --context 32768 --train-tokens 2e9
    tmath doctor ./gpt2 --engine transformers --json - > diagnosis.json
    tmath doctor ./ckpt --static                  # config and headers only, nothing allocated
    tmath doctor ./ckpt --check 'rope.*' --check attention.saturation --report doctor-report
    tmath doctor ./llama-8b --budget 10m          # sampled layers, short probes, by value

A policy folder (the project's ``save_pretrained`` or a LeRobot ACT folder) is recognised by
its ``config.json`` and gets the checks of a policy trunk (``doctor/policy.py``: attention
saturation and mask coverage of the policy's transformer, the temporal-ensembling weights
against ACT's definition, the executor, the chunk horizon against ``--fps``, ``--chunk-bound``
and the inference latency, static config checks); the language-model options (``--context``,
``--train-tokens``, ``--engine``, ``--set-model``, ``--probe-len``) are refused there, and the
policy options on a checkpoint. A folder that is neither is refused (exit 2).

    tmath doctor ./outputs/act_policy --fps 50      # a project or LeRobot ACT folder

``--budget`` (default 2m, ``none``: every check in full) plans the run to fit
(``doctor/budget.py``): static checks first, dynamic probes by value, on sampled layers and
short probe sequences when the full run would not fit; the output says which checks the budget
skipped and every sampled finding says what it sampled.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from transformer_math import safe_write
from transformer_math.commands.args import (
    fail,
    integer,
    internal_work,
    json_text,
    number,
    output_file,
    output_folder,
    terminal_safe,
)

if TYPE_CHECKING:  # rich, torch and the doctor are imported when the command runs
    from rich.console import Console

    from transformer_math.doctor.findings import Diagnosis

ENGINES = ("project", "transformers")
MAX_CONTEXT = 1 << 30
"""Largest ``--context`` (positions; 2**30 is beyond every released model)."""
MAX_PROBE_LEN = 4096
"""Longest ``--probe-len`` (the probes' cost grows with its square in attention)."""
MAX_DOCTOR_SEED = 2**32 - 1
"""Largest ``--seed`` (the doctor seeds each probe with seed * 1_000_003 + a salt, which must
stay inside torch's 64-bit seed range)."""

SEVERITY_STYLES = {"ok": "green", "info": "blue", "warning": "bold yellow", "error": "bold red"}


def _progress(enabled: bool) -> Any:
    """The callback ``examine`` calls with each check's name: an overwritten line on a terminal,
    one line per check otherwise (logs)."""
    tty = sys.stderr.isatty()

    def show(name: str) -> None:
        if not enabled:
            return
        if tty:
            sys.stderr.write(f"\r\033[Kdoctor: {name}")
        else:
            sys.stderr.write(f"doctor: running {name}\n")
        sys.stderr.flush()

    return show


def _clear_progress() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


def _number_text(value: Any) -> str:
    from transformer_math.report.table import format_value

    return format_value(value, max_chars=14)


def threshold_text(finding: Any) -> str:
    """``"> 0.1"`` when values above 0.1 are flagged, ``"< 0.5"`` for below, ``"—"`` without
    a threshold."""
    if finding.threshold is None:
        return "—"
    side = {"above": "> ", "below": "< "}.get(finding.comparison, "")
    return f"{side}{_number_text(finding.threshold)}"


def findings_table(diagnosis: Diagnosis) -> Any:
    """A rich table: one row per finding (check, severity, subject, measured, flagged when,
    summary)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAVY, header_style="bold", pad_edge=False)
    table.add_column("check", no_wrap=True, overflow="fold")
    table.add_column("severity", no_wrap=True)
    table.add_column("subject", overflow="fold")
    table.add_column("measured", justify="right", no_wrap=True)
    table.add_column("flagged when", justify="right", no_wrap=True)
    table.add_column("summary", overflow="fold")
    for f in diagnosis.findings:
        word = str(f.severity)
        # Text, not markup: a summary's "[sampled ...]" note is text, not a style tag
        table.add_row(Text(f.check), Text(word, style=SEVERITY_STYLES.get(word, "")),
                      Text(f.subject or ""), _number_text(f.measured), threshold_text(f),
                      Text(f.summary))
    return table


def summary_line(diagnosis: Diagnosis) -> str:
    """``N findings from K checks (S skipped): e errors, w warnings, i info, o ok; T s``."""
    counts = {w: 0 for w in ("error", "warning", "info", "ok")}
    for f in diagnosis.findings:
        counts[str(f.severity)] = counts.get(str(f.severity), 0) + 1
    ran = len(diagnosis.seconds) - len(diagnosis.skipped)
    verdict = "PROBLEMS FOUND" if diagnosis.flagged else "healthy"
    return (f"{verdict}: {len(diagnosis.findings)} findings from {ran} checks "
            f"({len(diagnosis.skipped)} skipped, engine {diagnosis.engine}): "
            f"{counts['error']} errors, {counts['warning']} warnings, {counts['info']} info, "
            f"{counts['ok']} ok; {sum(diagnosis.seconds.values()):.2f} s")


def print_diagnosis(diagnosis: Diagnosis, out: Console, *, verbose_skips: bool = True) -> None:
    """The table, what every flagged finding means (meaning / fix / source), the skipped checks
    and the summary line."""
    out.print(findings_table(diagnosis))
    for f in diagnosis.flagged:
        style = SEVERITY_STYLES.get(str(f.severity), "")
        said = terminal_safe((f" ({f.subject})" if f.subject else "") + f": {f.summary}")
        out.print(f"[{style}]{str(f.severity).upper()}[/] {escape(f.check)}" + escape(said),
                  highlight=False, markup=True)
        for label, text in (("meaning", f.meaning), ("fix", f.fix), ("source", f.source)):
            if text:
                out.print(f"    {label}: {terminal_safe(text)}", highlight=False, markup=False)
    if verbose_skips and diagnosis.skipped:
        out.print("skipped: " + "; ".join(f"{name} ({why})"
                                          for name, why in diagnosis.skipped.items()),
                  style="dim", highlight=False, markup=False)
    line = budget_line(diagnosis)
    if line is not None:
        out.print(line, style="yellow" if diagnosis.budget and diagnosis.budget.get("skipped")
                  else "dim", highlight=False, markup=False)
    out.print(summary_line(diagnosis), highlight=False, markup=False,
              style="bold red" if diagnosis.flagged else "bold green")


def _budget_seconds(text: str) -> float | None:
    """``--budget`` in seconds (None for ``none``); bad input exits 2 with one line."""
    if text.strip().lower() == "none":
        return None
    from transformer_math.doctor.budget import parse_budget

    try:
        return parse_budget(text, "--budget")
    except ValueError as exc:
        fail(str(exc))


def budget_line(diagnosis: Diagnosis) -> str | None:
    """What a budgeted run did: the budget, the time spent, the sampling and the skipped
    checks (None for an unbudgeted run)."""
    plan = diagnosis.budget
    if plan is None:
        return None
    parts = [f"budget {plan['seconds']:.4g} s, spent {plan['spent']:.3g} s (loading "
             f"{plan.get('load_s', 0.0):.3g} s)"]
    if plan.get("full_forward_s"):
        parts.append(f"one full probe forward ~{plan['full_forward_s']:.3g} s")
    sampled = plan.get("sampled")
    if sampled:
        parts.append(f"sampled layers {', '.join(map(str, sampled['layers']))} of "
                     f"{sampled['of']}, probe length {sampled['probe_len']}")
    skipped = plan.get("skipped") or []
    parts.append("skipped by the budget: " + (", ".join(skipped) if skipped else "none"))
    return "; ".join(parts)


def _checkpoint_dir(path: Path) -> Path:
    if not path.exists():
        fail(f"PATH {str(path)!r} does not exist")
    if not path.is_dir():
        fail(f"PATH {str(path)!r} is not a directory (expected a Hugging Face checkpoint "
             "folder or a policy folder, each with config.json)")
    if not (path / "config.json").is_file():
        fail(f"PATH {str(path)!r} has no config.json: neither a Hugging Face checkpoint "
             "directory nor a policy folder")
    from transformer_math.doctor.policy import unknown_policy_type

    kind = unknown_policy_type(path)
    if kind is not None:
        from transformer_math.robotics.policies.base import POLICY_TYPES

        fail(f"PATH {str(path)!r} is neither a Hugging Face checkpoint (its config.json has no "
             f"model_type) nor a policy folder: type {kind!r} is not a policy type (the "
             f"project's: {', '.join(POLICY_TYPES)}; LeRobot's: 'act' with dim_model)"[:600])
    return path


def _policy_dir(path: Path) -> str | None:
    """``"project"`` / ``"lerobot"`` for a policy folder, None otherwise (nothing loaded)."""
    if not path.is_dir():
        return None
    from transformer_math.doctor.policy import policy_folder_kind

    return policy_folder_kind(path)


def _emit(diagnosis: Diagnosis, out: Console, json_file: Path | None, to_stdout: bool,
          report_dir: Path | None) -> None:
    """Print the diagnosis, write --json and --report, exit with the diagnosis' code."""
    print_diagnosis(diagnosis, out)
    if json_file is not None:
        text = json_text(diagnosis.to_json(), indent=2) + "\n"
        if to_stdout:
            typer.echo(text, nl=False)
        else:
            try:
                safe_write.write_text(json_file, text)
            except OSError as exc:
                fail(f"cannot write --json file {str(json_file)!r}: {exc.strerror or exc}")
            out.print(f"wrote {json_file}", style="dim", markup=False)
    if report_dir is not None:
        from transformer_math.doctor.report import write_report

        try:
            index = write_report(diagnosis, report_dir)
        except OSError as exc:
            fail(f"cannot write --report folder {str(report_dir)!r}: {exc.strerror or exc}")
        out.print(f"wrote {index}", style="dim", markup=False)
    raise typer.Exit(diagnosis.exit_code)


def _consoles(to_stdout: bool) -> tuple[Console, Console]:
    from rich.console import Console

    err = Console(stderr=True, highlight=False)
    out = err if to_stdout else Console(highlight=False, width=None if sys.stdout.isatty()
                                        else 160)
    return err, out


def _doctor_policy(path: Path, *, check: list[str] | None, static: bool, seed: int,
                   fps: float | None, latency: float | None, chunk_bound: float | None,
                   seconds: float | None, json_file: Path | None, to_stdout: bool,
                   report_dir: Path | None) -> None:
    """``tmath doctor`` on a policy folder (``doctor/policy.py``)."""
    from transformer_math.commands.args import is_internal
    from transformer_math.doctor.policy import (
        CHUNK_BOUND_S,
        PolicyOptions,
        policy_subject,
        run_policy_checks,
        select_policy_checks,
    )

    try:
        chosen = select_policy_checks(check, static_only=static)
    except ValueError as exc:
        fail(str(exc))
    options = PolicyOptions(fps=fps, latency=latency, seed=seed,
                            chunk_bound=CHUNK_BOUND_S if chunk_bound is None else chunk_bound)
    loading = time.perf_counter()
    try:  # reading the folder: its errors are the user's input (a refused policy is a finding)
        subject = policy_subject(path, options, static_only=static)
    except (OSError, ValueError) as exc:
        if is_internal(exc):
            raise
        fail(f"cannot read policy folder {str(path)!r}: {exc}")
    _, out = _consoles(to_stdout)
    with internal_work():
        diagnosis = run_policy_checks(subject, chosen, progress=_progress(True),
                                      budget=seconds,
                                      already_spent=time.perf_counter() - loading)
    _clear_progress()
    _emit(diagnosis, out, json_file, to_stdout, report_dir)


def doctor(
    path: Annotated[Path, typer.Argument(
        help="Hugging Face checkpoint directory (config.json + safetensors weights), or a "
             "policy folder (the project's save_pretrained, or a LeRobot ACT folder).")],
    context: Annotated[int | None, typer.Option(
        "--context", help="Target context length (default: the model's maximum length).")
    ] = None,
    train_tokens: Annotated[float | None, typer.Option(
        "--train-tokens", help="Tokens the model was or will be trained on (Chinchilla check).")
    ] = None,
    engine: Annotated[str, typer.Option(
        "--engine", metavar="project|transformers",
        help="Who runs the model: the project's Transformer or Hugging Face transformers.")
    ] = "project",
    set_model: Annotated[bool, typer.Option(
        "--set-model", help="The model is meant to be permutation equivariant (sets).")
    ] = False,
    check: Annotated[list[str] | None, typer.Option(
        "--check", help="Glob on check names to run (repeatable; default: every check).")
    ] = None,
    static: Annotated[bool, typer.Option(
        "--static", help="Static checks only: config and headers, no weights loaded.")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the synthetic probe inputs.")] = 0,
    probe_len: Annotated[int | None, typer.Option(
        "--probe-len", help="Length of the synthetic probe sequences (default min(64, trained "
                            "length)).")
    ] = None,
    json_file: Annotated[Path | None, typer.Option(
        "--json", help="Write the diagnosis as JSON to this file ('-': to stdout, with the "
                       "table on stderr).")
    ] = None,
    report_dir: Annotated[Path | None, typer.Option(
        "--report", help="Write an HTML report with figures into this folder.")
    ] = None,
    budget: Annotated[str, typer.Option(
        "--budget", metavar="DURATION",
        help="Time budget: 90s, 5m, 1h ('none': every check in full). Static checks first, "
             "then dynamic probes by value, on sampled layers when the full run would not fit.")
    ] = "2m",
    fps: Annotated[float | None, typer.Option(
        "--fps", help="Policy folders: the control rate in Hz (chunk horizon = chunk size / fps).")
    ] = None,
    latency: Annotated[float | None, typer.Option(
        "--latency", metavar="SECONDS",
        help="Policy folders: the inference latency in seconds (default: measured).")
    ] = None,
    chunk_bound: Annotated[float | None, typer.Option(
        "--chunk-bound", metavar="SECONDS",
        help="Policy folders: the longest chunk horizon in seconds (default 2: ACT's k = 100 "
             "at 50 Hz).")
    ] = None,
) -> None:
    """Diagnose a checkpoint: the seed's troubleshooting manual and known engine bugs as checks.

    Prints every finding with its measured number and threshold, then meaning, fix and source
    of each flagged one. Exits 0 when nothing is a warning or an error, 1 otherwise, 2 on bad
    usage.
    """
    if engine not in ENGINES:
        fail(f"--engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    integer("--context", context, low=1, high=MAX_CONTEXT)
    number("--train-tokens", train_tokens, low=0, low_open=True)
    integer("--seed", seed, low=0, high=MAX_DOCTOR_SEED)
    integer("--probe-len", probe_len, low=2, high=MAX_PROBE_LEN)
    seconds = _budget_seconds(budget)
    to_stdout = json_file is not None and str(json_file) == "-"
    if not to_stdout:
        output_file("--json", json_file, make_parents=True)
    output_folder("--report", report_dir)
    number("--fps", fps, low=0, low_open=True)
    number("--latency", latency, low=0, low_open=True)
    number("--chunk-bound", chunk_bound, low=0, low_open=True)
    if not path.exists():
        fail(f"PATH {str(path)!r} does not exist")
    if _policy_dir(path) is not None:
        lm_only = [name for name, given in (
            ("--context", context is not None), ("--train-tokens", train_tokens is not None),
            ("--engine", engine != "project"), ("--set-model", set_model),
            ("--probe-len", probe_len is not None)) if given]
        if lm_only:
            fail(f"{lm_only[0]} applies to language-model checkpoints; PATH {str(path)!r} is a "
                 "policy folder")
        _doctor_policy(path, check=check, static=static, seed=seed, fps=fps, latency=latency,
                       chunk_bound=chunk_bound, seconds=seconds, json_file=json_file,
                       to_stdout=to_stdout, report_dir=report_dir)
    policy_only = [name for name, value in (("--fps", fps), ("--latency", latency),
                                            ("--chunk-bound", chunk_bound)) if value is not None]
    if policy_only:
        fail(f"{policy_only[0]} applies to policy folders; PATH {str(path)!r} is not one")
    _checkpoint_dir(path)
    if engine == "transformers" and not static and importlib.util.find_spec(
            "transformers") is None:
        fail("--engine transformers needs the 'transformers' package, which is not installed "
             "(pip install transformers), or use --engine project")

    from transformer_math.commands.args import is_internal
    from transformer_math.doctor import Options, run_checks, select_checks, subject_for

    try:
        chosen = select_checks(check, static_only=static)
    except ValueError as exc:
        fail(str(exc))
    options = Options(context=context, train_tokens=train_tokens, set_model=set_model,
                      seed=seed, probe_len=probe_len)
    loading = time.perf_counter()  # the budget counts the load too
    try:  # reading and loading the checkpoint: its errors are the user's input
        subject = subject_for(path, options, engine=engine, static_only=static)
    except ImportError as exc:
        fail(f"--engine {engine}: cannot load the engine ({exc})")
    except (OSError, ValueError, TypeError) as exc:
        if is_internal(exc):
            raise
        fail(f"cannot load checkpoint {str(path)!r}: {exc}")

    _, out = _consoles(to_stdout)
    with internal_work():  # checks run on validated input: an escaping ValueError is ours
        diagnosis = run_checks(subject, chosen, target=str(path),
                               progress=_progress(True), budget=seconds,
                               already_spent=time.perf_counter() - loading)
    _clear_progress()
    _emit(diagnosis, out, json_file, to_stdout, report_dir)


def register(app: typer.Typer) -> None:
    """Add ``doctor`` to the ``tmath`` application."""
    app.command("doctor")(doctor)
