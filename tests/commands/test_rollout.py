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


def _folder_policy(kind: str, tmp_path, *, action_mean: float = 0.0):
    """A small policy for the bimodal env (state 2, action 2) saved as a LeRobot-style folder."""
    import torch

    from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy

    if kind == "act":
        policy = ACTPolicy(ACTConfig(2, 2, chunk_size=4, dim=16, num_heads=2, encoder_layers=1,
                                     decoder_layers=1, latent_dim=4))
    else:
        policy = BCPolicy(BCConfig(2, 2, chunk_size=3, hidden=16))
    with torch.no_grad():
        policy.action_mean.fill_(action_mean)
    folder = tmp_path / kind
    policy.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("kind", ["act", "bc"])
def test_policy_folder_rollout(app, tmp_path, kind):
    """A saved ACT / BC policy folder runs (the CLI process imported no policy module itself)."""
    folder = _folder_policy(kind, tmp_path)
    out = tmp_path / "r.png"
    res = CliRunner().invoke(app, ["rollout", "bimodal", "--policy", str(folder), "--out",
                                   str(out), "--json", "--max-steps", "20"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["steps"] == 20 and summary["policy"] == str(folder) and out.is_file()


def test_trained_actions_are_clipped_to_the_action_bounds(app, tmp_path):
    """A policy whose actions overshoot the env's Box (here ~5 for bounds [-1, 1]) is clipped
    (gymnasium's ClipAction) instead of being refused by the environment."""
    folder = _folder_policy("bc", tmp_path, action_mean=5.0)
    res = CliRunner().invoke(app, ["rollout", "bimodal", "--policy", str(folder), "--out",
                                   str(tmp_path / "r.png"), "--json", "--max-steps", "5"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["steps"] == 5


def test_dt_folder_rollout_needs_a_target(app, tmp_path):
    from transformer_math.robotics.policies.decision_transformer import (
        DecisionTransformer,
        DTConfig,
    )

    folder = tmp_path / "dt"
    DecisionTransformer(DTConfig(2, 1, context_len=4, max_ep_len=64, dim=16)).save_pretrained(
        folder)
    args = ["rollout", "runner", "--policy", str(folder), "--out", str(tmp_path / "r.png"),
            "--json", "--max-steps", "10"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and "--target-return" in res.output
    res = CliRunner().invoke(app, [*args, "--target-return", "3"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["steps"] == 10


def test_forged_policy_folder_exits_2(app, tmp_path):
    folder = _folder_policy("bc", tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["hidden"] = "16"
    (folder / "config.json").write_text(json.dumps(config))
    res = CliRunner().invoke(app, ["rollout", "bimodal", "--policy", str(folder), "--out",
                                   str(tmp_path / "r.png")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "hidden" in res.output
