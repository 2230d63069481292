"""The ``tmath`` command line, on throw-away claims (the real registry is not imported).

A fixture swaps the registry's claim table for one holding claims with known outcomes: a
verified claim whose falsifier is caught, one whose falsifier is not caught, a failed one, one
that crashes, one with figures, a cited one and a full-tier one.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from transformer_math import bugs
from transformer_math.claims import registry
from transformer_math.claims.registry import (
    Claim,
    Context,
    Evidence,
    Falsifier,
    Figure,
    Series,
    Verdict,
    at_least,
    close_to,
    decide,
)
from transformer_math.cli import app, register_extra_commands
from transformer_math.registry import Registry

OFF_BY_ONE = bugs.declare_bug("testing.off-by-one", "adds one to the sum", module=__name__)
IGNORED = bugs.declare_bug("testing.ignored", "a site the blind check ignores", module=__name__)


def _sum() -> float:  # stands in for library code with two planted bugs
    bugs.planted(IGNORED)
    return 1.0 + 1.0 + (1.0 if bugs.planted(OFF_BY_ONE) else 0.0)


def _ok(name: str = "runs") -> list:
    return [at_least(name, 1.0, 0.0)]

QUICK_IDS = [
    "testing.broken",
    "testing.caught",
    "testing.cited",
    "testing.crash",
    "testing.figure",
    "testing.uncaught",
]
ALL_IDS = sorted([*QUICK_IDS, "testing.full-only"])


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})


@pytest.fixture
def fake_claims(monkeypatch: pytest.MonkeyPatch) -> dict[str, Claim]:
    """Replace the registry with the throw-away claims below."""
    table: Registry[Claim] = Registry("claim")
    monkeypatch.setattr(registry, "CLAIMS", table)
    monkeypatch.setattr(registry, "_import_topic_modules", lambda: None)

    @registry.claim(
        "testing.caught",
        source="test seed §1",
        statement="one plus one is two",
        falsifier=Falsifier(OFF_BY_ONE),
    )
    def caught(ctx: Context) -> Evidence:
        measured = _sum()
        ctx.report_progress(1.0)
        margins = [close_to("sum = 2", measured, 2.0, abs_=1e-9)]
        return Evidence(2.0, measured, 1e-9, decide(margins), margins=margins)

    @registry.claim(
        "testing.uncaught",
        source="test seed §2",
        statement="a check that cannot fail",
        falsifier=Falsifier(IGNORED),
    )
    def uncaught(ctx: Context) -> Evidence:
        _sum()
        return Evidence(1.0, 1.0, 0.0, Verdict.VERIFIED, margins=_ok())

    @registry.claim("testing.broken", source="test seed §3", statement="two equals three")
    def broken(ctx: Context) -> Evidence:
        margins = [close_to("2 = 3", 2.0, 3.0, abs_=0.1)]
        return Evidence(3.0, 2.0, 0.1, decide(margins), notes=["off by 1"], margins=margins)

    @registry.claim("testing.crash", source="test seed §4", statement="raises")
    def crash(ctx: Context) -> Evidence:
        raise RuntimeError("boom")

    @registry.claim("testing.cited", source="Someone 2020, Thm 1", statement="not checkable")
    def cited(ctx: Context) -> Evidence:
        return Evidence(None, None, None, Verdict.CITED)

    @registry.claim("testing.figure", source="test seed §5", statement="y = x^2 on a grid")
    def figure(ctx: Context) -> Evidence:
        xs = [1.0, 2.0, 4.0, 8.0]
        fig = Figure(
            "growth",
            "n",
            "t",
            [
                Series("measured", xs, [x * x for x in xs], "scatter", "o"),
                Series("fit", xs, [x * x for x in xs], "line", "--"),
            ],
            logx=True,
            logy=True,
            hlines=[(10.0, "ten")],
        )
        ctx.report_progress(0.5)
        return Evidence(
            [1.0, 4.0, 16.0, 64.0],
            [1.0, 4.0, 16.0, 64.0],
            1e-6,
            Verdict.VERIFIED,
            margins=_ok(),
            figures=[fig],
            details={"grid": xs},
        )

    @registry.claim("testing.full-only", source="test seed §6", statement="slow", tier="full")
    def full_only(ctx: Context) -> Evidence:
        return Evidence(0, 0, 0, Verdict.VERIFIED, margins=_ok())

    return table


def _one_line_error(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert "Traceback" not in output
    assert ": error: " in lines[0]
    return lines[0]


# --- help ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["verify"], ["list"], ["show"], ["report"], ["bench"]])
def test_every_command_has_help(runner: CliRunner, command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_version(runner: CliRunner) -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert "transformer-math" in result.output


# --- verify ----------------------------------------------------------------------------------


def test_verify_passing_claims_exit_0(runner: CliRunner, fake_claims: dict[str, Claim]) -> None:
    result = runner.invoke(app, ["verify", "-k", r"\.caught$|figure|cited"])
    assert result.exit_code == 0, result.output
    for cid in ("testing.caught", "testing.figure", "testing.cited"):
        assert cid in result.stdout
    assert "testing.uncaught" not in result.stdout
    assert "3 claims" in result.stdout
    assert "falsifiers caught 1/1" in result.stdout


@pytest.mark.parametrize("pattern", ["uncaught", "broken", "crash"])
def test_verify_problem_exits_1(
    runner: CliRunner, fake_claims: dict[str, Claim], pattern: str
) -> None:
    result = runner.invoke(app, ["verify", "-k", pattern])
    assert result.exit_code == 1, result.output
    assert f"testing.{pattern}" in result.stdout
    assert "FAILED" in result.stdout or "FALSIFIER NOT CAUGHT" in result.stdout


def test_verify_json_schema(
    runner: CliRunner, fake_claims: dict[str, Claim], tmp_path: Path
) -> None:
    out = tmp_path / "sub" / "results.json"
    result = runner.invoke(app, ["verify", "--seed", "3", "--size", "tiny", "--json", str(out)])
    assert result.exit_code == 1, result.output  # uncaught, broken and crash are problems
    document = json.loads(out.read_text())
    ids = [c["id"] for c in document["claims"]]
    assert ids == QUICK_IDS  # quick tier by default: the full-only claim is left out
    required = {
        "id",
        "topic",
        "source",
        "statement",
        "tier",
        "verdict",
        "predicted",
        "measured",
        "tolerance",
        "falsifier",
        "seconds",
    }
    for entry in document["claims"]:
        assert required <= set(entry), entry
        assert entry["falsifier"] is None or {"name", "caught"} <= set(entry["falsifier"])
    by_id = {c["id"]: c for c in document["claims"]}
    assert by_id["testing.caught"]["falsifier"]["caught"] is True
    assert by_id["testing.uncaught"]["falsifier"]["caught"] is False
    assert by_id["testing.broken"]["verdict"] == "failed"
    assert by_id["testing.crash"]["error"] == "RuntimeError: boom"
    assert by_id["testing.cited"]["verdict"] == "cited"
    summary = document["summary"]
    for key in ("seed", "tier", "size", "version", "torch", "timestamp", "total", "problems"):
        assert key in summary
    assert summary["torch_threads"] == 1  # verify runs claims with one thread by default
    assert (summary["seed"], summary["tier"], summary["size"]) == (3, "quick", "tiny")
    assert summary["total"] == len(QUICK_IDS)
    assert summary["failed"] == 2 and summary["problems"] == 3
    assert summary["falsifiers"] == 2 and summary["falsifiers_caught"] == 1


def test_verify_full_tier_selects_everything(
    runner: CliRunner, fake_claims: dict[str, Claim], tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    runner.invoke(app, ["verify", "--tier", "full", "--json", str(out)])
    assert [c["id"] for c in json.loads(out.read_text())["claims"]] == ALL_IDS


def test_verify_report(runner: CliRunner, fake_claims: dict[str, Claim], tmp_path: Path) -> None:
    report_dir = tmp_path / "report"
    result = runner.invoke(app, ["verify", "--report", str(report_dir)])
    assert result.exit_code == 1, result.output
    page = (report_dir / "index.html").read_text()
    for cid in QUICK_IDS:
        assert cid in page
    png = report_dir / "figures" / "testing.figure-1.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 'src="figures/testing.figure-1.png"' in page
    assert json.loads((report_dir / "results.json").read_text())["claims"]


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "-k", "no-such-claim"],
        ["verify", "-k", "("],
        ["verify", "--tier", "medium"],
        ["verify", "--size", "huge"],
        ["verify", "--seed", "-1"],
        ["verify", "--threads", "0"],
        ["verify", "--no-such-option"],
        ["list", "--tier", "slow"],
        ["show", "testing.nope"],
        ["show"],
        ["no-such-command"],
    ],
)
def test_usage_errors_exit_2_with_one_line(
    runner: CliRunner, fake_claims: dict[str, Claim], args: list[str]
) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    _one_line_error(result.stderr)


# --- list ------------------------------------------------------------------------------------


def test_list_table_and_json(runner: CliRunner, fake_claims: dict[str, Claim]) -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    for cid in ALL_IDS:
        assert cid in result.stdout
    assert "off-by-one" in result.stdout

    result = runner.invoke(app, ["list", "--json", "--tier", "quick"])
    assert result.exit_code == 0, result.output
    claims = json.loads(result.stdout)["claims"]
    assert [c["id"] for c in claims] == QUICK_IDS
    caught = next(c for c in claims if c["id"] == "testing.caught")
    assert caught["statement"] == "one plus one is two"
    assert caught["falsifier"]["name"] == OFF_BY_ONE
    assert caught["falsifier"]["bug"] == OFF_BY_ONE
    assert {"id", "tier", "topic", "source", "statement", "falsifier"} <= set(caught)


# --- show ------------------------------------------------------------------------------------


def test_show_prints_everything(runner: CliRunner, fake_claims: dict[str, Claim]) -> None:
    result = runner.invoke(app, ["show", "testing.caught"])
    assert result.exit_code == 0, result.output
    for text in (
        "testing.caught",
        "test seed §1",
        "one plus one is two",
        "verified",
        "off-by-one",
        "adds one to the sum",
        "caught",
        "yes",
    ):
        assert text in result.stdout, text

    result = runner.invoke(app, ["show", "testing.broken"])
    assert result.exit_code == 1
    assert "off by 1" in result.stdout  # the notes

    result = runner.invoke(app, ["show", "testing.figure", "--json"])
    assert result.exit_code == 0
    entry = json.loads(result.stdout)
    assert entry["details"] == {"grid": [1.0, 2.0, 4.0, 8.0]}
    assert entry["figures"][0]["title"] == "growth"


def test_show_unknown_id_suggests(runner: CliRunner, fake_claims: dict[str, Claim]) -> None:
    result = runner.invoke(app, ["show", "caught"])
    assert result.exit_code == 2
    assert "testing.caught" in _one_line_error(result.stderr)


# --- report ----------------------------------------------------------------------------------


def test_report_from_saved_run(
    runner: CliRunner, fake_claims: dict[str, Claim], tmp_path: Path
) -> None:
    saved = tmp_path / "run.json"
    runner.invoke(app, ["verify", "-k", r"figure|\.caught$", "--json", str(saved)])
    out_dir = tmp_path / "html"
    result = runner.invoke(app, ["report", str(out_dir), "--from", str(saved)])
    assert result.exit_code == 0, result.output
    page = (out_dir / "index.html").read_text()
    assert "testing.figure" in page and "testing.caught" in page
    assert (out_dir / "figures" / "testing.figure-1.png").is_file()

    # Default source: DIR/results.json, which the first rendering wrote.
    result = runner.invoke(app, ["report", str(out_dir)])
    assert result.exit_code == 0, result.output


def test_report_bad_input_exit_2(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(tmp_path / "empty")])
    assert result.exit_code == 2
    assert "does not exist" in _one_line_error(result.stderr)

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = runner.invoke(app, ["report", str(tmp_path / "out"), "--from", str(bad)])
    assert result.exit_code == 2
    assert "not valid JSON" in _one_line_error(result.stderr)

    bad.write_text('{"results": []}')
    result = runner.invoke(app, ["report", str(tmp_path / "out"), "--from", str(bad)])
    assert result.exit_code == 2
    assert "'claims'" in _one_line_error(result.stderr)


# --- extra commands ----------------------------------------------------------------------------


def test_extra_commands_are_discovered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: CliRunner
) -> None:
    package = tmp_path / "fake_tmath_commands"
    package.mkdir()
    (package / "__init__.py").write_text('"""Fake command package."""\n')
    (package / "greet.py").write_text(
        textwrap.dedent(
            '''
            import typer

            def register(app: typer.Typer) -> None:
                @app.command("greet")
                def greet(name: str) -> None:
                    """Say hello."""
                    typer.echo(f"hello {name}")
            '''
        )
    )
    (package / "helpers.py").write_text("VALUE = 1\n")  # no register(): ignored
    (package / "_private.py").write_text("raise RuntimeError('must not be imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        target = typer.Typer()

        @target.command()
        def other() -> None:
            """A second command so that the app stays a group."""

        assert register_extra_commands(target, "fake_tmath_commands") == ["greet"]
        result = runner.invoke(target, ["greet", "world"])
        assert result.exit_code == 0, result.output
        assert result.output.strip() == "hello world"
    finally:
        for name in [m for m in sys.modules if m.startswith("fake_tmath_commands")]:
            del sys.modules[name]


def test_top_level_guard_user_errors_vs_internal_bugs() -> None:
    """ValueError/TypeError/OSError from a command: one line, exit 2; the same inside
    ``internal_work`` (claims, benchmarks) or any other exception: a traceback (a bug)."""
    from transformer_math.cli import TmathGroup
    from transformer_math.commands.args import internal_work

    demo = typer.Typer(cls=TmathGroup)

    @demo.command("user")
    def user(kind: str) -> None:
        exc = {"value": ValueError("--x must be finite, got inf"),
               "type": TypeError("--x must be a number"),
               "os": FileNotFoundError(2, "No such file or directory", "/missing/x")}[kind]
        raise exc

    @demo.command("bug")
    def bug(kind: str) -> None:
        if kind == "internal":
            with internal_work():
                raise ValueError("a claim's own ValueError")
        raise RuntimeError("boom")

    runner = CliRunner()
    for kind, text in (("value", "--x must be finite, got inf"), ("type", "--x must be a number"),
                       ("os", "No such file or directory: '/missing/x'")):
        res = runner.invoke(demo, ["user", kind], prog_name="tmath")
        assert res.exit_code == 2, res.output
        assert res.stderr.strip().splitlines() == [f"tmath user: error: {text}"]
    res = runner.invoke(demo, ["bug", "internal"], prog_name="tmath")
    assert isinstance(res.exception, ValueError)  # not swallowed: CliRunner holds it
    res = runner.invoke(demo, ["bug", "crash"], prog_name="tmath")
    assert isinstance(res.exception, RuntimeError)


def test_verify_json_dash_prints_the_document_to_stdout(
        runner: CliRunner, fake_claims: dict[str, Claim], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``--json -`` prints strict JSON to stdout, the table to stderr, and creates no file."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["verify", "-k", r"\.caught$", "--json", "-"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [c["id"] for c in document["claims"]] == ["testing.caught"]
    assert "1 claims" in result.stderr and not (tmp_path / "-").exists()


def test_bench_json_dash_prints_to_stdout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    from transformer_math.bench import harness

    table: Registry = Registry("benchmark")
    monkeypatch.setattr(harness, "BENCHMARKS", table)
    monkeypatch.setattr(harness, "_import_benchmark_modules", lambda: None)

    @harness.benchmark("fake.noop")
    def _noop() -> harness.Benchmark:
        return harness.Benchmark("fake.noop", "does nothing", baseline=lambda: None,
                                 candidate=lambda: None)

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["bench", "--repeats", "2", "--json", "-"])
    assert result.exit_code == 0, result.output
    assert [b["name"] for b in json.loads(result.stdout)["benchmarks"]] == ["fake.noop"]
    assert not (tmp_path / "-").exists()


def _help_imports(command: list[str]) -> dict[str, bool]:
    import subprocess

    code = textwrap.dedent(f"""
        import json, sys
        from transformer_math.cli import main
        try:
            main({command!r} + ["--help"])
        except SystemExit as exit:
            assert exit.code == 0, exit.code
        print(json.dumps({{m: m in sys.modules for m in ("torch", "matplotlib")}}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ``tmath rope --help`` lists the live registry of RoPE types (issue 13), which needs torch.
HELP_NEEDS_TORCH = {"rope"}


def test_help_of_every_command_does_not_import_torch() -> None:
    """``tmath --help`` and ``tmath CMD --help`` answer without importing torch (issue 16)."""
    names = sorted(c.name for c in typer.main.get_command(app).commands.values())
    assert {"verify", "inspect", "chinchilla"} <= set(names)
    assert _help_imports([]) == {"torch": False, "matplotlib": False}
    for name in names:
        imported = _help_imports([name])
        assert imported["matplotlib"] is False, name
        assert imported["torch"] is (name in HELP_NEEDS_TORCH), name


# --- languages ---------------------------------------------------------------------------------


def test_cli_languages_are_the_i18n_languages() -> None:
    from transformer_math import cli, i18n

    assert cli.LANGS == i18n.LANGS


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "--lang", "fr"],
        ["verify", "--lang", "ZH", "--report", "{tmp}/r"],
        ["report", "{tmp}", "--lang", "de"],
        ["list", "--lang", "cn"],
        ["show", "testing.caught", "--lang", ""],
    ],
)
def test_bad_lang_exits_2_with_one_line(
    runner: CliRunner, fake_claims: dict[str, Claim], tmp_path: Path, args: list[str]
) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    line = _one_line_error(result.stderr)
    assert "--lang must be one of en, zh" in line
    assert not (tmp_path / "r").exists() and not (tmp_path / "index.html").exists()


def test_verify_and_report_in_chinese(
    runner: CliRunner, fake_claims: dict[str, Claim], tmp_path: Path
) -> None:
    report_dir = tmp_path / "zh"
    result = runner.invoke(app, ["verify", "-k", r"figure|\.caught$", "--lang", "zh",
                                 "--report", str(report_dir)])
    assert result.exit_code == 0, result.output
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in page and "目录" in page and "返回顶部" in page
    assert "证伪器已捕获" in page  # testing.caught's falsifier, in Chinese

    en_dir = tmp_path / "en"
    result = runner.invoke(app, ["report", str(en_dir), "--from",
                                 str(report_dir / "results.json"), "--lang", "en"])
    assert result.exit_code == 0, result.output
    english = (en_dir / "index.html").read_text(encoding="utf-8")
    assert '<html lang="en">' in english and "目录" not in english
    result = runner.invoke(app, ["report", str(en_dir), "--lang", "zh"])
    assert result.exit_code == 0, result.output
    assert '<html lang="zh-CN">' in (en_dir / "index.html").read_text(encoding="utf-8")


def test_list_and_show_statements_in_chinese(
    runner: CliRunner, fake_claims: dict[str, Claim], monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformer_math.i18n import zh_statements

    monkeypatch.setitem(zh_statements.ZH_STATEMENTS, "testing.caught", "一加一等于二")
    result = runner.invoke(app, ["list", "--lang", "zh"])
    assert result.exit_code == 0, result.output
    assert "一加一等于二" in result.stdout and "one plus one is two" not in result.stdout
    assert "a check that cannot fail" in result.stdout  # no translation: English
    result = runner.invoke(app, ["list", "--lang", "zh", "--json"])
    caught = next(c for c in json.loads(result.stdout)["claims"] if c["id"] == "testing.caught")
    assert caught["statement"] == "one plus one is two"  # the JSON is language-neutral
    result = runner.invoke(app, ["show", "testing.caught", "--lang", "zh"])
    assert result.exit_code == 0, result.output
    assert "一加一等于二" in result.stdout
