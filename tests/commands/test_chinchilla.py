"""`tmath chinchilla`: JSON and text output, argument validation."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from transformer_math.commands.chinchilla import register


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command("noop")
    def noop() -> None:  # a second command keeps typer in multi-command mode
        """Unused."""

    return app


def test_cli_json_and_text() -> None:
    runner = CliRunner()
    res = runner.invoke(_app(), ["chinchilla", "--tokens", "1e9", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["params"] == pytest.approx(5e7) and data["flops"] == pytest.approx(3e17)
    res = runner.invoke(
        _app(),
        [
            "chinchilla",
            "--flops",
            "1.21e20",
            "--approach",
            "3",
            "--inference-tokens",
            "1e12",
            "--json",
        ],
    )
    data = json.loads(res.output)
    assert res.exit_code == 0 and data["loss"] > 1.69
    assert data["inference_aware"]["params"] < data["params"]
    res = runner.invoke(_app(), ["chinchilla", "--params", "1e9"])
    assert res.exit_code == 0 and "tokens/param" in res.output


@pytest.mark.parametrize(
    "args",
    [
        ["--tokens", "-5"],
        ["--flops", "0"],
        ["--params", "nan"],
        [],
        ["--tokens", "1e9", "--flops", "1e20"],
        ["--flops", "1e20", "--approach", "9"],
        ["--flops", "1e20", "--inference-tokens", "1e9"],
        ["--flops", "1e20", "--approach", "3", "--inference-tokens", "-1"],
    ],
)
def test_cli_rejects_nonsense(args: list[str]) -> None:
    res = CliRunner().invoke(_app(), ["chinchilla", *args])
    assert res.exit_code == 2
    assert "root chinchilla: error: " in res.output and "Traceback" not in res.output
    _one_line_error(["chinchilla", *args])


def _one_line_error(argv: list[str]) -> str:
    """Through the real ``tmath`` app: exit 2, one line ``tmath chinchilla: error: ...``."""
    from transformer_math.cli import app

    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2, (argv, res.output)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tmath chinchilla: error: "), res.output
    assert res.stdout == ""
    return lines[0]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--tokens", "1e-300"], "tokens"),  # was ZeroDivisionError
        (["--params", "1e308", "--approach", "3"], "params"),  # was OverflowError
        (["--params", "1e308"], "params"),  # was exit 0 printing "tokens D inf"
        (["--params", "1e308", "--json"], "params"),  # was exit 0 emitting Infinity
        (["--flops", "1e308", "--json"], "flops"),  # was exit 0 emitting Infinity and NaN
        (["--tokens", "1e308", "--json"], "tokens"),  # was OverflowError
        (["--flops", "1e21", "--approach", "3", "--inference-tokens", "1e308"],
         "inference_tokens"),  # was exit 0 printing inf and nan
        (["--params", "1e-300", "--approach", "3", "--inference-tokens", "1"], "params"),
        (["--tokens", "inf"], "--tokens"),
        (["--tokens", "-inf", "--json"], "--tokens"),
        (["--inference-tokens", "nan", "--flops", "1e20", "--approach", "3"],
         "--inference-tokens"),
    ],
)
def test_overflowing_inputs_are_one_line_errors(args: list[str], named: str) -> None:
    assert named in _one_line_error(["chinchilla", *args])


def test_good_input_unchanged_through_real_app() -> None:
    from transformer_math.cli import app

    res = CliRunner().invoke(app, ["chinchilla", "--flops", "1e21", "--approach", "3",
                                   "--inference-tokens", "1e13", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["params"] == pytest.approx(2.2171e9, rel=1e-3)
    assert data["inference_aware"]["params"] < data["params"]
