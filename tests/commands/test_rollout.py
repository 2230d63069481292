"""``tmath rollout`` through its own typer app."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from transformer_math.commands.rollout import register
from transformer_math.robotics.policies.bc import BCConfig, BCPolicy


@pytest.fixture(scope="module")
def app():
    app = typer.Typer()
    register(app)

    @app.callback()
    def main() -> None:  # keep "rollout" as a subcommand
        pass

    return app


@pytest.mark.parametrize("env", ["point-mass", "bimodal", "grid", "runner"])
def test_scripted_rollout_writes_png(app, tmp_path, env):
    out = tmp_path / f"{env}.png"
    res = CliRunner().invoke(app, ["rollout", env, "--out", str(out), "--json",
                                   "--max-steps", "60"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["env"] == env and out.is_file() and out.stat().st_size > 1000
    if env == "grid":
        assert summary["return"] == 4.0  # the scripted A->B->C path


def test_checkpoint_rollout(app, tmp_path):
    ckpt = tmp_path / "bc.safetensors"
    BCPolicy(BCConfig(2, 2, chunk_size=5)).save(ckpt)
    res = CliRunner().invoke(app, ["rollout", "bimodal", "--policy", str(ckpt),
                                   "--out", str(tmp_path / "b.png"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["steps"] >= 1


@pytest.mark.parametrize("args", [
    ["rollout", "moon"],
    ["rollout", "bimodal", "--policy", "missing.safetensors"],
    ["rollout", "bimodal", "--out", "x.jpg"],
])
def test_bad_usage_exits_2(app, args):
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2
    assert "Traceback" not in res.output


def test_wrong_policy_for_env_exits_2(app, tmp_path):
    ckpt = tmp_path / "bc.safetensors"
    BCPolicy(BCConfig(7, 2)).save(ckpt)
    res = CliRunner().invoke(app, ["rollout", "bimodal", "--policy", str(ckpt),
                                   "--out", str(tmp_path / "b.png")])
    assert res.exit_code == 2
