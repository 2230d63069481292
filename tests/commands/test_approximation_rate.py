"""``tmath approx-rate`` through its own typer app."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from transformer_math.commands.approximation_rate import register


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command("noop")  # a second command keeps typer in multi-command mode
    def noop() -> None:
        """Nothing."""

    return app


def test_exercise_numbers_in_json():
    runner = CliRunner()
    res = runner.invoke(_app(), ["approx-rate", "--epsilon", "0.1", "--dim", "10",
                                 "--smoothness", "2", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert round(data["units"]) == 100000 and data["exponent_d_over_s"] == 5.0
    res = runner.invoke(_app(), ["approx-rate", "--units", "100", "--dim", "10",
                                 "--smoothness", "5"])
    assert res.exit_code == 0 and "0.1" in res.output


def test_user_mistakes_exit_2_with_one_line():
    runner = CliRunner()
    for args in (["--epsilon", "0.1", "--units", "5"], ["--epsilon", "1.5"],
                 ["--epsilon", "0.1", "--smoothness", "0"]):
        full = ["approx-rate", "--dim", "10", "--smoothness", "2", *args]
        res = runner.invoke(_app(), full)
        assert res.exit_code == 2, (args, res.output)
