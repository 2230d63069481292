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
    assert "Error:" in res.output and "Traceback" not in res.output
