"""Hypothesis fuzz of every ``tmath`` subcommand (issue 15): hostile and careless numbers and
paths never give a traceback.

The subcommands and their options are read from the typer application, so a new command is
fuzzed automatically. Every numeric option gets random values, among them 0, negatives, NaN,
+-inf, 1e308, 1e-300 and huge integers; path options get missing files and missing folders.
The CLI runs in-process (typer's ``CliRunner``). Asserted for every example:

- the exit code is 0, 1 or 2 and no exception escaped (no traceback in the output);
- exit 2 prints exactly one line on stderr;
- with the ``--json`` flag and exit 0, stdout is strict JSON (no NaN, no Infinity).

Expensive commands get work that is tiny: ``verify``/``show``/``margins``/``mutants`` run on a
throw-away claim registry (one trivial claim, one demo bug), ``bench`` selects no benchmark (so
only the argument checks run), ``rollout`` examples are capped.
"""

from __future__ import annotations

import json
import math
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from transformer_math import bugs
from transformer_math.claims import mutants as zoo_module
from transformer_math.claims import registry
from transformer_math.claims.registry import Context, Evidence, close_to, decide
from transformer_math.cli import app
from transformer_math.registry import Registry

FUZZ_BUG = bugs.declare_bug("demo.fuzz-flip", "flips the fuzz demo sign", module=__name__)

GROUP = typer.main.get_command(app)
COMMANDS = sorted(GROUP.commands)

FLOATS = st.one_of(
    st.sampled_from([0.0, -0.0, -1.0, 1.0, 0.5, 2.0, 8.0, math.nan, math.inf, -math.inf, 1e308,
                     -1e308, 1e-300, 5e-324, 2.0**64, 4096.0]),
    st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, allow_infinity=False),
).map(repr)
INTS = st.one_of(
    st.sampled_from([0, -1, 1, 2, 3, 7, 64, 128, 2**31, 2**63, 2**64, 10**30, -(10**30)]),
    st.integers(min_value=-100, max_value=5000),
).map(str)
NOT_NUMBERS = st.sampled_from(["", "x", "1e400", "1.5", "0x10", "--", "nan", "-inf"])
WORDS = st.sampled_from(["quick", "full", "tiny", "default", "large", "1", "2", "3", "epoch",
                         "default", "linear", "yarn", "llama3", "longrope", "dynamic", "bogus",
                         "", "0-2", "0,1", "0-100000000000", "1,x", "nan,1", "beta_fast=nan",
                         "factor=2", "x=", "-1", "1e308"])

#: Options not fuzzed: they select what runs (a random pattern could select real claims).
NOT_FUZZED = {"pattern", "bug_pattern"}
#: Base arguments per command: tiny work, placed first (fuzzed options given later win).
BASE_ARGS = {
    "verify": ["-k", "^fuzz\\."],
    "show": ["fuzz.sign"],
    "margins": ["-k", "^fuzz\\.", "--seeds", "0-1"],
    "mutants": ["-k", "^fuzz\\.", "--bug", "fuzz"],
    "bench": ["-k", "^no benchmark has this name$"],
    "list": ["-k", "^fuzz\\."],
    "rope": ["--type", "yarn"],  # takes factor, beta_fast, beta_slow, attention_factor
}
#: Options of which a command takes exactly one: one of them is given per example.
EXCLUSIVE = {"chinchilla": ("tokens", "flops", "params"), "approx-rate": ("epsilon", "units")}
#: Plausible values of options whose valid range is narrow.
GOOD = {
    "partial_rotary_factor": st.floats(min_value=0.05, max_value=1.0).map(repr),
    "epsilon": st.floats(min_value=1e-3, max_value=0.999).map(repr),
    "units": st.floats(min_value=1.0, max_value=1e12).map(repr),
    "base": st.floats(min_value=2.0, max_value=1e6).map(repr),
    "head_dim": st.sampled_from(["4", "16", "64", "128"]),
    "factor": st.floats(min_value=1.0, max_value=16.0).map(repr),
    "train_len": st.integers(min_value=16, max_value=512).map(str),
    "original_max": st.integers(min_value=16, max_value=512).map(str),
    "seq_len": st.integers(min_value=1024, max_value=4096).map(str),
}
#: Fewer examples for commands that run an environment or a plot per example.
EXAMPLES = {"rollout": 12, "rope": 30, "report": 30, "inspect": 20}
DEFAULT_EXAMPLES = 30


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Good and bad paths: missing files and folders, a file used as a folder, hostile JSON."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "file.txt").write_text("not a folder\n")
    (root / "deep.json").write_text("[" * 20000 + "]" * 20000)
    (root / "garbage.json").write_text('{"claims": [{"id": 1}]')
    (root / "nan.json").write_text('{"claims": [{"id": "a", "measured": NaN, "seconds": "x"}],'
                                   ' "summary": {"problems": "many"}}')
    (root / "ok.json").write_text(json.dumps({"claims": [{"id": "a", "verdict": "verified"}]}))
    (root / "ckpt").mkdir()
    (root / "ckpt" / "config.json").write_text('{"hidden_size": 1e308}')
    missing = str(root / "missing" / "deeper")
    return {
        "good_out": [str(root / "good.png"), str(root / "good.json"), str(root / "report")],
        "good_in": [str(root / "ok.json")],
        "out": [str(root / "out.png"), str(root / "out.json"), f"{missing}/x.png",
                f"{missing}/x.json", str(root / "file.txt" / "x.png"), str(root),
                str(root / "noext")],
        "in": [str(root / "deep.json"), str(root / "garbage.json"), str(root / "nan.json"),
               str(root / "ok.json"), f"{missing}/r.json", str(root), str(root / "ckpt"),
               str(root / "file.txt")],
    }


@pytest.fixture(scope="module", autouse=True)
def tiny_registry() -> Iterator[None]:
    """One trivial claim and one demo bug instead of the real registry and zoo."""
    mp = pytest.MonkeyPatch()
    mp.setattr(registry, "CLAIMS", Registry("claim"))
    mp.setattr(registry, "_import_topic_modules", lambda: None)
    mp.setattr(zoo_module, "select_bugs", lambda pattern=None: [bugs.BUGS[FUZZ_BUG]])

    @registry.claim("fuzz.sign", source="s", statement="the sign is +1", falsifier=FUZZ_BUG)
    def sign(ctx: Context) -> Evidence:
        value = -1.0 if bugs.planted(FUZZ_BUG) else 1.0
        margins = [close_to("sign", value, 1.0, abs_=0.5)]
        return Evidence(1.0, value, 0.5, decide(margins), margins=margins)

    yield
    mp.undo()


def _annotation(param: Any) -> Any:
    """The Python type of a typer parameter (``int | None`` -> ``int``)."""
    descriptor = getattr(param, "type_descriptor", None)
    ann = getattr(descriptor, "annotation", None)
    if ann is None:  # other typer versions: the click type's name
        name = getattr(getattr(param, "type", None), "name", "")
        return {"integer": int, "float": float, "boolean": bool, "path": Path}.get(name, str)
    if isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union:
        ann = next(a for a in typing.get_args(ann) if a is not type(None))
    return typing.get_args(ann)[0] if typing.get_origin(ann) is list else ann


def _is_path(param: Any) -> bool:
    return _annotation(param) is Path or param.name in {"out", "policy", "path", "out_dir"}


def _value(param: Any, paths: dict[str, list[str]], good: bool) -> st.SearchStrategy[str]:
    """A plausible (``good``) or a hostile value for ``param``."""
    ann = _annotation(param)
    if _is_path(param):
        if param.name == "policy":
            return st.just("scripted") if good else st.sampled_from(paths["in"])
        if param.name in {"from_file", "path"}:
            return st.sampled_from(paths["good_in"] if good else paths["in"])
        return st.sampled_from(paths["good_out"] if good else paths["out"])
    if good and param.name in GOOD:
        return GOOD[param.name]
    if ann is float:
        plausible = st.floats(min_value=1e-3, max_value=1e3).map(repr)
        return plausible if good else st.one_of(FLOATS, NOT_NUMBERS)
    if ann is int:
        plausible = st.integers(min_value=1, max_value=512).map(str)
        return plausible if good else st.one_of(INTS, NOT_NUMBERS)
    return WORDS


@st.composite
def _argv(draw: st.DrawFn, name: str, paths: dict[str, list[str]]) -> tuple[list[str], bool]:
    """A command line for ``name``: its base arguments, then random options and arguments."""
    cmd = GROUP.commands[name]
    argv = [name, *BASE_ARGS.get(name, [])]
    json_flag = False
    options = [p.name for p in cmd.params if p.param_type_name == "option"
               and not getattr(p, "is_flag", False) and p.name not in NOT_FUZZED]
    hostile = draw(st.sampled_from([None, *options, *options]))  # at most one hostile option
    group = EXCLUSIVE.get(name, ())
    chosen = draw(st.sampled_from(group)) if group else None
    for param in cmd.params:
        if param.name in NOT_FUZZED:
            continue
        if param.param_type_name == "argument":
            if name in BASE_ARGS:  # show's ID is given
                continue
            if name == "rollout":
                argv.append(draw(st.sampled_from(["point-mass", "bimodal", "grid", "runner",
                                                  "moon"])))
            else:
                argv.append(draw(st.sampled_from(paths["in"] + paths["out"])))
            continue
        if getattr(param, "is_flag", False):
            if draw(st.booleans()):
                argv.append(param.opts[0])
                json_flag = json_flag or param.opts[0] == "--json"
            continue
        if param.name in group and param.name != chosen:
            continue
        if param.name == hostile:
            argv += [param.opts[0], draw(_value(param, paths, good=False))]
        elif param.required or param.name == chosen or (
                _annotation(param) is not str and draw(st.booleans())):  # str: its default
            argv += [param.opts[0], draw(_value(param, paths, good=True))]
    if name == "rollout" and "--out" not in argv:
        argv += ["--out", paths["out"][0]]  # not the default ./rollout.png
    return argv, json_flag


def _strict_json(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"non-finite number {constant} in --json output")

    return json.loads(text, parse_constant=refuse)


def check(argv: list[str], json_flag: bool) -> None:
    """Run ``tmath ARGV`` in-process and check the contract of the module docstring."""
    threads = torch.get_num_threads()
    try:
        result = CliRunner(env={"COLUMNS": "120", "NO_COLOR": "1"}).invoke(app, argv)
    finally:
        torch.set_num_threads(threads)  # verify/mutants --threads set it process-wide
    shown = f"tmath {' '.join(argv)}\n{result.output}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{shown}\nraised {result.exception!r}") from result.exception
    assert result.exit_code in (0, 1, 2), shown
    assert "Traceback" not in result.output, shown
    if result.exit_code == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, shown
    if json_flag and result.exit_code == 0:
        _strict_json(result.stdout)


@pytest.mark.parametrize("name", COMMANDS)
def test_fuzz_every_subcommand(name: str, paths: dict[str, list[str]]) -> None:
    @settings(max_examples=EXAMPLES.get(name, DEFAULT_EXAMPLES), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(case=_argv(name, paths))
    def fuzz(case: tuple[list[str], bool]) -> None:
        check(*case)

    fuzz()


def test_every_command_is_fuzzed() -> None:
    """The enumeration sees the extra commands of ``transformer_math/commands/`` too."""
    assert {"verify", "list", "show", "report", "bench", "chinchilla", "rope", "approx-rate",
            "rollout", "mutants", "inspect"} <= set(COMMANDS)


@pytest.mark.parametrize("argv", [
    ["chinchilla", "--tokens", "1e-300"],
    ["chinchilla", "--params", "1e308", "--approach", "3"],
    ["chinchilla", "--params", "1e308", "--json"],
    ["rope", "--factor", "inf"],
    ["rope", "--factor", "1e6"],
    ["rope", "--figure", "MISSING/dir/x.png"],
    ["approx-rate", "--epsilon", "1e-300", "--dim", "100", "--smoothness", "1"],
    ["rollout", "grid", "--out", "MISSING/x.png"],
    ["margins", "--seeds", "0-100000000000"],
    ["verify", "--threads", str(2**70)],
])
def test_reported_cases_exit_2_with_one_line(argv: list[str], tmp_path: Path) -> None:
    """The issue's cases (tracebacks, a 32 GB allocation, exit 0 on inf) by name."""
    argv = [a.replace("MISSING", str(tmp_path / "missing")) for a in argv]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    (line,) = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert line.startswith(f"tmath {argv[0]}: error: "), line
    assert result.stdout == ""
