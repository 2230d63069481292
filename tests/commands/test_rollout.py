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


@pytest.mark.parametrize(("args", "named"), [
    (["--out", "MISSING/x.png"], "--out"),  # was a FileNotFoundError after the whole rollout
    (["--seed", "-1"], "--seed"),  # was a gymnasium traceback
    (["--seed", str(2**70)], "--seed"),
    (["--target-return", "nan"], "--target-return"),  # was accepted silently
    (["--max-steps", str(2**70)], "--max-steps"),
])
def test_arguments_checked_before_any_work(app, tmp_path, monkeypatch, args, named):
    import gymnasium

    def no_env(*a, **k):
        raise AssertionError("the environment was built before the arguments were checked")

    monkeypatch.setattr(gymnasium, "make", no_env)
    args = [a.replace("MISSING", str(tmp_path / "missing")) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "r.png")]
    res = CliRunner().invoke(app, ["rollout", "grid", *args])
    assert res.exit_code == 2, res.output
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("root rollout: error: ") and named in line, line
