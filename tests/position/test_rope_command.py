"""Tests of the ``tmath rope`` calculator (commands/rope.py), on a private typer app."""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer
from typer.testing import CliRunner

from transformer_math.commands.rope import register


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def main() -> None:  # keeps 'rope' a subcommand
        pass

    return app


def _run(*args: str):
    return CliRunner().invoke(_app(), ["rope", *args])


def test_json_default_known_values() -> None:
    r = _run("--head-dim", "128", "--train-len", "512", "--seq-len", "4096", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert math.isclose(data["inv_freq"][0], 1.0)
    assert math.isclose(data["inv_freq"][1], 0.86596, rel_tol=1e-5)
    assert math.isclose(data["inv_freq"][-1], 1.1548e-4, rel_tol=1e-4)
    assert data["attention_factor"] == 1.0
    # pairs seeing unseen phases are the low-frequency ones (wavelength > L_train)
    unseen = [p["pair"] for p in data["pairs"] if p["unseen_before"] > 0]
    assert unseen and min(unseen) == data["critical_pair"]
    assert all(p["wavelength_before"] > 512 for p in data["pairs"] if p["unseen_before"] > 0)


def test_yarn_fixes_coverage_and_reports_factor(tmp_path: Path) -> None:
    fig = tmp_path / "rope.png"
    r = _run("--head-dim", "64", "--train-len", "256", "--type", "yarn", "--factor", "8",
             "--json", "--figure", str(fig))
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["seq_len"] == 2048
    assert math.isclose(data["attention_factor"], 0.1 * math.log(8) + 1)
    assert data["pairs_unseen_before"] > 0 and data["pairs_unseen_after"] == 0
    assert fig.exists() and fig.stat().st_size > 1000


def test_table_output_and_llama3() -> None:
    r = _run("--head-dim", "32", "--type", "llama3", "--factor", "8", "--original-max", "512",
             "--base", "500000")
    assert r.exit_code == 0, r.output
    assert "attention factor" in r.output


def test_bad_input_exit_2() -> None:
    for args in (["--type", "bogus"], ["--head-dim", "15"],
                 ["--type", "longrope", "--factor", "4"],
                 ["--type", "longrope", "--head-dim", "4", "--short-factor", "1,x",
                  "--long-factor", "1,2"],
                 ["--train-len", "100", "--seq-len", "50"]):
        r = _run(*args)
        assert r.exit_code == 2, (args, r.output)
