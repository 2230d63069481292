"""Tests of the ``tmath rope`` calculator (commands/rope.py), on a private typer app."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import torch
import typer
from typer.testing import CliRunner

from transformer_math.commands.rope import parse_params, register, rope_parameters
from transformer_math.functional.rope_scaling import (
    ROPE_SCALING_FUNCTIONS,
    default_inv_freq,
    register_rope_scaling,
)


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
    assert data["params"] == {} and data["length_dependent"] is False
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
    # the registered defaults of the optional parameters are passed explicitly
    assert data["params"]["beta_fast"] == 32.0 and data["params"]["truncate"] is True
    assert fig.exists() and fig.stat().st_size > 1000


def test_table_output_and_llama3() -> None:
    r = _run("--head-dim", "32", "--type", "llama3", "--factor", "8", "--original-max", "512",
             "--base", "500000")
    assert r.exit_code == 0, r.output
    assert "attention factor" in r.output


def test_factor_defaults_to_the_asked_extension_and_param_option() -> None:
    r = _run("--head-dim", "64", "--train-len", "256", "--seq-len", "2048", "--type", "yarn",
             "--param", "beta_fast=16", "--param", "truncate=false", "--json")
    assert r.exit_code == 0, r.output
    params = json.loads(r.output)["params"]
    assert params["factor"] == 8.0 and params["original_max_position_embeddings"] == 256
    assert params["beta_fast"] == 16.0 and params["truncate"] is False
    r = _run("--type", "longrope", "--head-dim", "4", "--short-factor", "1,1",
             "--long-factor", "1,2", "--train-len", "100", "--seq-len", "400", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["params"]["factor"] == 4.0 and data["length_dependent"] is True
    assert math.isclose(data["attention_factor"], math.sqrt(1 + math.log(4) / math.log(100)))


def test_bad_input_exit_2() -> None:
    for args in (["--type", "bogus"], ["--head-dim", "15"],
                 ["--type", "longrope", "--factor", "4"],
                 ["--type", "longrope", "--head-dim", "4", "--short-factor", "1,x",
                  "--long-factor", "1,2"],
                 ["--type", "linear", "--beta-fast", "3"],
                 ["--param", "nokey"],
                 ["--train-len", "100", "--seq-len", "50"]):
        r = _run(*args)
        assert r.exit_code == 2, (args, r.output)


def test_help_lists_every_registered_type_with_its_metadata() -> None:
    r = _run("--help")
    assert r.exit_code == 0, r.output
    for name in ROPE_SCALING_FUNCTIONS.names():
        assert f"{name}:" in r.output, name
    assert "beta_fast=32.0" in r.output  # a registered default is shown


def test_rope_parameters_reads_the_registry() -> None:
    assert rope_parameters("default", {}, original_max=64, seq_len=256) == {}
    assert rope_parameters("linear", {}, original_max=64, seq_len=256) == {"factor": 4.0}
    assert rope_parameters("llama3", {"factor": 2.0}, original_max=64, seq_len=256,
                           fallbacks={"low_freq_factor": 1.0, "high_freq_factor": 4.0}) == {
        "factor": 2.0, "original_max_position_embeddings": 64, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0}
    assert parse_params(["a=1", "b=1,2", "c=true"]) == {"a": 1.0, "b": [1.0, 2.0], "c": True}
    with pytest.raises(ValueError, match="rope type"):
        rope_parameters("bogus", {}, original_max=64, seq_len=256)


def _halved(rotary_dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
            ) -> tuple[torch.Tensor, float]:
    """A test-only type: every frequency divided by ``divisor`` (default 2)."""
    return default_inv_freq(rotary_dim, base) / float(params.get("divisor", 2.0)), 1.0


@pytest.fixture
def registered_test_type() -> Iterator[str]:
    name = "test-halved"
    register_rope_scaling(name, optional=("divisor",), defaults={"divisor": 2.0},
                          description="test only: inv_freq / divisor")(_halved)
    try:
        yield name
    finally:
        ROPE_SCALING_FUNCTIONS.remove(name)


def test_a_new_registration_is_a_valid_type_with_no_other_change(
        registered_test_type: str) -> None:
    """One registration makes a type appear in --help and be accepted (issue 13)."""
    help_text = _run("--help").output
    assert f"{registered_test_type}: test only: inv_freq / divisor" in help_text
    assert "divisor=2.0" in help_text
    r = _run("--head-dim", "16", "--train-len", "64", "--type", registered_test_type,
             "--param", "divisor=4", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["params"] == {"divisor": 4.0}
    assert all(math.isclose(p["ratio"], 0.25) for p in data["pairs"])
    r = _run("--head-dim", "16", "--train-len", "64", "--type", registered_test_type, "--json")
    assert r.exit_code == 0 and json.loads(r.output)["params"] == {"divisor": 2.0}


def test_a_removed_type_is_rejected_again() -> None:
    name = "test-temporary"
    register_rope_scaling(name, description="test only")(_halved)
    assert _run("--type", name, "--json").exit_code == 0
    ROPE_SCALING_FUNCTIONS.remove(name)
    r = _run("--type", name, "--json")
    assert r.exit_code == 2 and name not in _run("--help").output


@pytest.mark.parametrize(("args", "named"), [
    (["--factor", "inf"], "--factor"),  # was OverflowError
    (["--factor", "nan"], "--factor"),  # was ValueError traceback
    (["--factor", "1e6"], "--factor"),  # tried to allocate 32 GB
    (["--type", "yarn", "--factor", "1e308"], "--factor"),
    (["--train-len", "0"], "--train-len"),  # was ZeroDivisionError
    (["--original-max", "0"], "--original-max"),  # was ZeroDivisionError
    (["--head-dim", str(2**40)], "--head-dim"),
    (["--seq-len", "262145"], "pair-positions"),  # 64 pairs x 262145 > MAX_PAIR_POSITIONS
    (["--base", "inf"], "--base"),
    (["--beta-fast", "nan", "--type", "yarn"], "--beta-fast"),
    (["--figure", "MISSING/x.png"], "--figure"),  # was FileNotFoundError after computing
    (["--figure", "NOEXT"], "--figure"),
])
def test_sizes_and_paths_refused_before_computing(tmp_path, monkeypatch, args, named):
    import transformer_math.commands.rope as rope_command

    def no_work(**kwargs):
        raise AssertionError("rope_report ran before the arguments were checked")

    monkeypatch.setattr(rope_command, "rope_report", no_work)
    args = [a.replace("MISSING", str(tmp_path / "missing")).replace("NOEXT", str(tmp_path / "x"))
            for a in args]
    r = _run(*args)
    assert r.exit_code == 2, r.output
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("root rope: error: ") and named in line, line


def test_largest_allowed_size_is_documented_and_accepted() -> None:
    from transformer_math.commands.rope import MAX_PAIR_POSITIONS

    assert MAX_PAIR_POSITIONS == 2**23
    r = _run("--head-dim", "2", "--train-len", "8", "--seq-len", "64", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["rotary_dim"] == 2


def test_the_command_and_the_backbone_share_one_position_maximum() -> None:
    from transformer_math.commands.rope import MAX_POSITIONS
    from transformer_math.nn.position import MAX_ROPE_POSITIONS

    assert MAX_POSITIONS == MAX_ROPE_POSITIONS
