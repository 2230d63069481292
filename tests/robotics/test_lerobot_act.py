"""LeRobot ACT folders load into the project's LeRobot-architecture ACT with equal actions.

The fixture (tests/fixtures/lerobot_act/, made once by its make_fixture.py with lerobot 0.4.4
in a side environment) holds two lerobot ACT folders (state + environment state; state + one
3x64x64 camera through ResNet-18) and lerobot's outputs on recorded observations. The camera
folder's backbone is refilled from weights_recipe.py (45 MB would not be committed)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from transformer_math.nn.init import no_init_draws
from transformer_math.robotics.policies.act_lerobot import (
    LeRobotACTConfig,
    LeRobotACTPolicy,
    sinusoid_1d,
)
from transformer_math.robotics.policies.base import load_policy
from transformer_math.robotics.policies.lerobot_act_adapter import (
    read_lerobot_act,
    write_lerobot_act,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "lerobot_act"
TOL = 1e-5


def _recipe():
    spec = importlib.util.spec_from_file_location("weights_recipe",
                                                  FIXTURE / "weights_recipe.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """The two lerobot folders, the camera one with its backbone refilled."""
    root = tmp_path_factory.mktemp("lerobot_act")
    state = root / "state"
    shutil.copytree(FIXTURE / "state", state)
    camera = root / "camera"
    shutil.copytree(FIXTURE / "camera", camera)
    recipe = _recipe()
    keys = json.loads((camera / "backbone_keys.json").read_text())
    weights = load_file(str(camera / "model_without_backbone.safetensors"))
    weights.update(recipe.recipe_state_dict(keys, seed=recipe.BACKBONE_SEED))
    save_file(weights, str(camera / "model.safetensors"), metadata={"format": "pt"})
    return {"state": state, "camera": camera}


@pytest.fixture(scope="module")
def policies(folders) -> dict[str, LeRobotACTPolicy]:
    return {name: read_lerobot_act(path) for name, path in folders.items()}


def _record(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "outputs.safetensors"))


def _observations(record: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix):]: v for k, v in record.items()
            if k.startswith(prefix + "observation.")}


@pytest.mark.parametrize("name", ["state", "camera"])
def test_select_action_equals_lerobot_over_a_queue_of_chunks(policies, folders, name):
    """7 control steps, n_action_steps=3 of chunk_size=5: three chunks, raw observations in
    (lerobot's preprocessor normalises), unnormalised actions out."""
    policy, rec = policies[name], _record(folders[name])
    obs = _observations(rec, "select.")
    policy.reset()
    actions = torch.cat([policy.select_action({k: v[t:t + 1] for k, v in obs.items()})
                         for t in range(rec["select.action"].shape[0])])
    err = float((actions - rec["select.action"]).abs().max())
    assert err <= TOL, err
    assert float(rec["select.action"].abs().max()) > 0.5  # not a trivially small output


@pytest.mark.parametrize("name", ["state", "camera"])
def test_predict_action_chunk_equals_lerobot(policies, folders, name):
    policy, rec = policies[name], _record(folders[name])
    with torch.no_grad():
        chunk = policy.predict_action_chunk(_observations(rec, "chunk."))
    want = rec["chunk.action_normalised"] * policy.action_std + policy.action_mean
    assert chunk.shape == (2, 5, 3)
    assert float((chunk - want).abs().max()) <= TOL


def test_l1_loss_reductions_at_40_percent_padding(policies, folders):
    """lerobot's L1 averages over padded steps too: at 2 padded of 5 steps it is 0.6 x the mean
    over the valid steps (the project's ``"valid"``); ``loss_reduction="lerobot"`` equals it."""
    policy, rec = policies["state"], _record(folders["state"])
    # lerobot's recorded L1 is its eval-mode forward (z = 0): the same network without the VAE
    config = dataclasses.replace(policy.config, use_vae=False)
    with no_init_draws():
        plain = LeRobotACTPolicy(config)
    plain.load_state_dict({k: v for k, v in policy.state_dict().items()
                           if k in plain.state_dict()})
    plain.eval()
    batch = {**_observations(rec, "chunk."), "action": rec["loss.action"],
             "action_is_pad": rec["loss.action_is_pad"]}
    with torch.no_grad():
        lerobot_l1 = plain(batch)[1]["l1"]
        valid = dataclasses.replace(config, loss_reduction="valid")
        with no_init_draws():
            other = LeRobotACTPolicy(valid)
        other.load_state_dict(plain.state_dict())
        valid_l1 = other.eval()(batch)[1]["l1"]
    assert abs(lerobot_l1 - float(rec["loss.l1_lerobot"])) <= TOL
    assert lerobot_l1 / valid_l1 == pytest.approx(0.6, abs=1e-6)


def test_project_act_offers_lerobots_reduction():
    """The project's own ACT: ``loss_reduction="lerobot"`` is 0.6 x ``"valid"`` at 40 %
    padding (same weights, z = 0 without the latent)."""
    from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy

    losses = {}
    for reduction in ("valid", "lerobot"):
        policy = ACTPolicy(ACTConfig(state_dim=3, action_dim=2, chunk_size=5, dim=16,
                                     use_latent=False, loss_reduction=reduction))
        policy.reset_parameters(torch.Generator().manual_seed(0))
        g = torch.Generator().manual_seed(1)
        batch = {"observation.state": torch.randn(4, 3, generator=g),
                 "action": torch.randn(4, 5, 2, generator=g),
                 "action_is_pad": torch.tensor([[False] * 3 + [True] * 2] * 4)}
        losses[reduction] = policy.eval()(batch)[1]["l1"]
    assert losses["lerobot"] / losses["valid"] == pytest.approx(0.6, abs=1e-6)
    with pytest.raises(ValueError, match="loss_reduction"):
        ACTConfig(state_dim=3, action_dim=2, loss_reduction="sum")


@pytest.mark.parametrize("name", ["state", "camera"])
def test_write_then_read_is_bit_equal(policies, folders, name, tmp_path):
    policy, source = policies[name], folders[name]
    write_lerobot_act(policy, tmp_path / "out")
    written, original = load_file(str(tmp_path / "out" / "model.safetensors")), load_file(
        str(source / "model.safetensors"))
    assert sorted(written) == sorted(original)
    assert all(torch.equal(written[k], original[k]) for k in original)
    for stats in ("policy_preprocessor_step_3_normalizer_processor.safetensors",
                  "policy_postprocessor_step_0_unnormalizer_processor.safetensors"):
        a, b = load_file(str(tmp_path / "out" / stats)), load_file(str(source / stats))
        assert sorted(a) == sorted(b) and all(torch.equal(a[k], b[k]) for k in a)
    want = json.loads((source / "config.json").read_text())
    got = json.loads((tmp_path / "out" / "config.json").read_text())
    assert {k: v for k, v in got.items() if k != "device"} == {
        k: v for k, v in want.items() if k != "device"}
    for pipeline in ("policy_preprocessor.json", "policy_postprocessor.json"):
        assert (json.loads((tmp_path / "out" / pipeline).read_text())
                == json.loads((source / pipeline).read_text()))
    again = read_lerobot_act(tmp_path / "out")
    mine = policy.state_dict()
    assert all(torch.equal(v, mine[k]) for k, v in again.state_dict().items())
    assert again.executor_config() == policy.executor_config()


def test_project_folder_round_trip_of_the_lerobot_preset(policies, tmp_path):
    """The preset is a policy kind of its own (``act_lerobot``): the project's own folder
    format saves and loads it too."""
    policy = policies["camera"]
    policy.save_pretrained(tmp_path / "p")
    loaded = load_policy(tmp_path / "p")
    assert isinstance(loaded, LeRobotACTPolicy) and loaded.config == policy.config
    mine = policy.state_dict()
    assert all(torch.equal(v, mine[k]) for k, v in loaded.state_dict().items())


def test_fresh_preset_trains_one_step_with_the_vae():
    config = LeRobotACTConfig(state_dim=3, action_dim=2, chunk_size=4, dim=16, num_heads=2,
                              dim_feedforward=32, encoder_layers=1, vae_encoder_layers=1,
                              latent_dim=4, dropout=0.1)
    policy = LeRobotACTPolicy(config)
    policy.reset_parameters(torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)
    batch = {"observation.state": torch.randn(5, 3, generator=g),
             "action": torch.randn(5, 4, 2, generator=g),
             "action_is_pad": torch.tensor([[False] * 3 + [True]] * 5)}
    loss, info = policy.train()(batch)
    loss.backward()
    assert torch.isfinite(loss) and info["kl"] >= 0
    assert policy.encoder_robot_state_input_proj.weight.grad is not None
    assert torch.equal(policy.vae_encoder_pos_enc[0], sinusoid_1d(6, 16))


def _edited(folder: Path, tmp_path: Path, **changes) -> Path:
    out = tmp_path / "edited"
    shutil.copytree(folder, out)
    raw = json.loads((out / "config.json").read_text())
    raw.update(changes)
    (out / "config.json").write_text(json.dumps(raw))
    return out


@pytest.mark.parametrize(("changes", "match"), [
    ({"feedforward_activation": "gelu"}, "feedforward_activation must be 'relu'"),
    ({"n_obs_steps": 2}, "n_obs_steps must be 1"),
    ({"type": "diffusion"}, "type must be 'act'"),
    ({"input_features": {"observation.environment_state": {"type": "ENV", "shape": [4]}}},
     "needs a 1-D 'observation.state'"),
    ({"replace_final_stride_with_dilation": True}, "dilation is not supported"),
    ({"dim_model": 48}, "tensors do not match the config"),
])
def test_unsupported_folders_are_refused_naming_the_file(folders, tmp_path, changes, match):
    with pytest.raises(ValueError, match=match) as info:
        read_lerobot_act(_edited(folders["state"], tmp_path, **changes))
    assert "edited" in str(info.value)


def test_missing_statistics_and_renames_are_refused(folders, tmp_path):
    out = _edited(folders["state"], tmp_path)
    pre = json.loads((out / "policy_preprocessor.json").read_text())
    pre["steps"][0]["config"]["rename_map"] = {"observation.state": "observation.qpos"}
    (out / "policy_preprocessor.json").write_text(json.dumps(pre))
    with pytest.raises(ValueError, match="rename_map"):
        read_lerobot_act(out)
    (out / "policy_preprocessor.json").unlink()
    with pytest.raises(ValueError, match="normalisation statistics"):
        read_lerobot_act(out)


def test_the_documented_example_runs(monkeypatch, capsys):
    """docs/lerobot.md's python block, run from the repository root."""
    root = FIXTURE.parents[2]
    text = (root / "docs" / "lerobot.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", text, re.S)
    monkeypatch.chdir(root)
    exec(compile(block, "docs/lerobot.md", "exec"), {})
    assert "(1, 3) act_lerobot 1" in capsys.readouterr().out
