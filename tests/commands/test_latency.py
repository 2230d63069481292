"""``tmath latency``: numbers, JSON, figure, and one-line errors (exit 2)."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from transformer_math.commands.latency import register

app = typer.Typer()
register(app)
app.command("noop")(lambda: None)  # a second command keeps ``latency`` a subcommand
runner = CliRunner()


def test_json_prefill_and_budget() -> None:
    r = runner.invoke(app, ["latency", "--preset", "open-llama-3b", "--tokens", "512",
                            "--hardware", "h100-sxm", "--budget-ms", "20", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["mode"] == "prefill" and 3.0 < out["cost"]["ms"] < 4.5
    assert out["max_tokens_in_budget"] > 512


def test_decode_custom_hardware_and_figure(tmp_path) -> None:  # type: ignore[no-untyped-def]
    fig = tmp_path / "lat.png"
    r = runner.invoke(app, ["latency", "--hidden", "64", "--layers", "2", "--heads", "4",
                            "--decode", "--tflops", "1", "--bandwidth", "10", "--figure",
                            str(fig)])
    assert r.exit_code == 0, r.output
    assert "decode" in r.output and fig.is_file()


@pytest.mark.parametrize("args", [
    ["--hidden", "0", "--layers", "2", "--heads", "2"],
    ["--layers", "2", "--heads", "2"],
    ["--preset", "nope"],
    ["--preset", "open-llama-3b", "--hidden", "8"],
    ["--preset", "open-llama-3b", "--tflops", "1"],
    ["--preset", "open-llama-3b", "--hardware", "tpu"],
    ["--preset", "open-llama-3b", "--budget-ms", "-1"],
    ["--preset", "open-llama-3b", "--attention", "sparse"],
    ["--hidden", "10", "--layers", "2", "--heads", "3"],
    ["--preset", "open-llama-3b", "--figure", "x.txt"],
    ["--preset", "open-llama-3b", "--measure"],
])
def test_user_mistakes_exit_2_with_one_line(args) -> None:  # type: ignore[no-untyped-def]
    r = runner.invoke(app, ["latency", *args])
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and "error" in r.output


def test_measure_times_the_projects_model_here() -> None:
    r = runner.invoke(app, ["latency", "--hidden", "32", "--layers", "1", "--heads", "2",
                            "--tokens", "16", "--measure", "--json"])
    assert r.exit_code == 0, r.output
    m = json.loads(r.output)["measured"]
    assert m["hardware"]["name"] == "cpu-here"
    assert m["prefill"]["ratio"] > 0 and m["decode"]["ratio"] > 0
