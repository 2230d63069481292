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


def test_overflowing_results_are_one_line_errors_through_tmath():
    """Were OverflowError / ZeroDivisionError tracebacks and an exit 0 printing inf."""
    from transformer_math.cli import app

    runner = CliRunner()
    for args, named in (
        (["--epsilon", "1e-300", "--dim", "100", "--smoothness", "1"], "epsilon"),
        (["--epsilon", "1e-300", "--dim", "100", "--smoothness", "1", "--json"], "epsilon"),
        (["--units", "1e308", "--dim", "1e-300", "--smoothness", "1e300"], "dim / smoothness"),
        (["--epsilon", "0.5", "--dim", "1e308", "--smoothness", "1e-300"], "dim / smoothness"),
        (["--epsilon", "nan", "--dim", "1", "--smoothness", "1"], "--epsilon"),
        (["--units", "inf", "--dim", "1", "--smoothness", "1"], "--units"),
        (["--units", "5", "--dim", "-inf", "--smoothness", "1"], "--dim"),
    ):
        res = runner.invoke(app, ["approx-rate", *args])
        assert res.exit_code == 2, (args, res.output)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tmath approx-rate: error: "), lines
        assert named in lines[0] and res.stdout == ""
    res = runner.invoke(app, ["approx-rate", "--epsilon", "0.1", "--dim", "10",
                              "--smoothness", "2", "--json"])
    assert res.exit_code == 0 and round(json.loads(res.stdout)["units"]) == 100000
