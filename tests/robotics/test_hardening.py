"""Hostile and careless input to the robotics environments, policies and policy files (issue 15).

Each test asserts both directions: the bad input is refused with a clear error, and good input
still gives the same numbers as before.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from transformer_math.robotics.envs import ENV_IDS
from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy
from transformer_math.robotics.policies.base import load_policy
from transformer_math.robotics.policies.bc import BCConfig, BCPolicy
from transformer_math.robotics.policies.decision_transformer import DecisionTransformer, DTConfig
from transformer_math.robotics.policies.ensembling import make_executor
from transformer_math.robotics.training import build_seeded

BOX_ENVS = ("point-mass", "bimodal", "runner")


def _env(name: str) -> gym.Env:
    return gym.make(ENV_IDS[name]).unwrapped  # the class itself, without gymnasium's wrappers


_NOTHING = object()


def _episode(env: gym.Env, seed: int, steps: int, bad: object = _NOTHING) -> list[np.ndarray]:
    """Rows (obs, reward) of ``steps`` sampled actions; ``bad`` is tried (and refused) first."""
    env.action_space.seed(7)
    obs, _ = env.reset(seed=seed)
    if bad is not _NOTHING:
        with pytest.raises(ValueError, match="action"):
            env.step(bad)
    rows = [obs]
    for _ in range(steps):
        obs, r, term, trunc, _ = env.step(env.action_space.sample())
        rows.append(np.append(obs, r))
        if term or trunc:
            break
    return rows


# ---------------------------------------------------------------------------- environments
def _bad_box_actions(space: gym.spaces.Box) -> list[object]:
    shape, high = space.shape, space.high
    good = np.zeros(shape, np.float32)
    nan, inf = good.copy(), good.copy()
    nan[0], inf[-1] = np.nan, np.inf
    return [nan, inf, -inf, good[:-1] if shape[0] > 1 else np.zeros(2, np.float32),
            good[None], np.float32(0.0), high + 0.5, -high - 0.5,
            np.array(["a"] * shape[0]), good.astype(np.complex64), np.zeros(shape, bool),
            [object()] * shape[0]]


@pytest.mark.parametrize("name", BOX_ENVS)
def test_box_env_refuses_bad_actions_and_is_not_poisoned(name):
    env = _env(name)
    reference = _episode(_env(name), 3, 12)
    for bad in _bad_box_actions(env.action_space):
        got = _episode(env, 3, 12, bad=bad)
        assert all(np.array_equal(x, y) for x, y in zip(got, reference, strict=True)), bad


@pytest.mark.parametrize("bad", [5, -1, 2.5, 1.0, True, "1", np.array([1]), np.nan, None])
def test_grid_env_refuses_bad_actions(bad):
    env = _env("grid")
    reference = _episode(_env("grid"), 0, 10)
    got = _episode(env, 0, 10, bad=bad)
    assert all(np.array_equal(x, y) for x, y in zip(got, reference, strict=True))


def test_grid_env_accepts_integer_actions():
    for action in (4, np.int64(4), np.array(4), np.uint8(4)):
        env = _env("grid")
        env.reset(seed=0)
        assert env.step(action)[4]["cell"] == (1, 3)


@pytest.mark.parametrize("name", sorted(ENV_IDS))
def test_step_before_reset_and_after_the_end_raise(name):
    env = _env(name)
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        env.step(env.action_space.sample())
    env.action_space.seed(0)
    env.reset(seed=0)
    for _ in range(1000):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            break
    assert term or trunc
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        env.step(env.action_space.sample())
    env.reset(seed=0)
    env.step(env.action_space.sample())  # a new episode steps again


# ---------------------------------------------------------------------------- policies
def _bc(chunk_size: int = 4) -> BCPolicy:
    policy = build_seeded(lambda: BCPolicy(BCConfig(3, 2, chunk_size=chunk_size)), 0)
    g = torch.Generator().manual_seed(1)
    policy.fit_normalization(torch.randn(50, 3, generator=g) * 3 + 1,
                             torch.randn(50, 2, generator=g))
    return policy.eval()


def _act(**kw) -> ACTPolicy:
    cfg = ACTConfig(3, 2, chunk_size=4, dim=16, num_heads=2, encoder_layers=1, decoder_layers=1,
                    **kw)
    return build_seeded(lambda: ACTPolicy(cfg), 0).eval()


def _dt(action_type: str = "continuous") -> DecisionTransformer:
    cfg = DTConfig(3, 2, action_type=action_type, context_len=4, max_ep_len=10, dim=16,
                   dropout=0.0)
    return build_seeded(lambda: DecisionTransformer(cfg), 0).eval()


def _obs(steps: int, batch: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(steps, batch, 3, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("executor", ["open_loop", "replan", "act_ensemble"])
@pytest.mark.parametrize("kind", ["bc", "act"])
def test_select_action_is_batched(kind, executor):
    """A batch of B observations gives B actions, each the action of its own batch-1 run."""
    policy = _bc() if kind == "bc" else _act()
    policy.set_executor(make_executor(executor, 4))
    obs = _obs(6, 3)
    policy.reset()
    batched = torch.stack([policy.select_action({"observation.state": o}) for o in obs])
    assert batched.shape == (6, 3, 2)
    for i in range(3):
        policy.reset()
        single = torch.stack([policy.select_action({"observation.state": o[i:i + 1]})
                              for o in obs])[:, 0]
        torch.testing.assert_close(batched[:, i], single)


@pytest.mark.parametrize("executor", ["open_loop", "act_ensemble"])
@pytest.mark.parametrize("kind", ["bc", "act"])
def test_select_action_refuses_a_batch_change_mid_episode(kind, executor):
    policy = _bc() if kind == "bc" else _act()
    policy.set_executor(make_executor(executor, 4))
    policy.reset()
    policy.select_action({"observation.state": torch.zeros(1, 3)})
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        policy.select_action({"observation.state": torch.zeros(3, 3)})
    policy.reset()
    assert policy.select_action({"observation.state": torch.zeros(3, 3)}).shape == (3, 2)


@pytest.mark.parametrize("mode", ["open_loop", "replan", "act_ensemble", "newest_ensemble"])
def test_executors_hold_one_batch_size_per_episode(mode):
    executor = make_executor(mode, 3)
    chunk = torch.arange(6.0).view(2, 3, 1)
    with pytest.raises(ValueError, match="chunk_fn"):  # a chunk for another batch is refused
        executor(lambda o: chunk, torch.zeros(3, 1))
    assert executor(lambda o: chunk, torch.zeros(2, 1)).shape == (2, 1)  # nothing was locked
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        executor(lambda o: torch.zeros(1, 3, 1), torch.zeros(1, 1))
    with pytest.raises(ValueError, match="batched"):
        executor(lambda o: chunk, torch.tensor(0.0))
    executor.reset()
    assert executor(lambda o: torch.zeros(1, 3, 1), torch.zeros(1, 1)).shape == (1, 1)


def test_act_latent_per_episode_refuses_a_batch_change():
    policy = _act(latent_sampling="sample_per_episode")
    policy.reset()
    policy.predict_action_chunk({"observation.state": torch.zeros(2, 3)})
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        policy.predict_action_chunk({"observation.state": torch.zeros(3, 3)})


@pytest.mark.parametrize("kind", ["bc", "act", "dt"])
def test_observations_are_validated_at_every_step(kind):
    policy = {"bc": _bc, "act": _act, "dt": _dt}[kind]()
    policy.reset(0.0) if kind == "dt" else policy.reset()  # DT: the target is required (issue 16)
    good = {"observation.state": torch.zeros(1, 3)}
    policy.select_action(good)  # the chunk queue now holds actions: the next step checks too
    if kind == "dt":
        good["reward"] = torch.zeros(1)
    for bad in (torch.full((1, 3), float("nan")), torch.tensor([[0.0, float("inf"), 0.0]])):
        with pytest.raises(ValueError, match="finite"):
            policy.select_action({**good, "observation.state": bad})
    for bad in (torch.zeros(3), torch.zeros(1, 4), torch.zeros(1, 1, 3)):
        with pytest.raises(ValueError, match=r"observation\.state"):
            policy.select_action({**good, "observation.state": bad})
    with pytest.raises(TypeError, match="batch"):
        policy.select_action(torch.zeros(1, 3))


def test_dt_rollout_inputs_are_validated():
    dt = _dt()
    dt.reset(torch.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="target"):
        dt.select_action({"observation.state": torch.zeros(2, 3)})  # 3 targets, 2 observations
    dt.select_action({"observation.state": torch.zeros(3, 3)})
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        dt.select_action({"observation.state": torch.zeros(1, 3), "reward": torch.zeros(1)})
    for reward in (torch.zeros(3, 1), torch.zeros(2), torch.tensor([0.0, float("nan"), 0.0])):
        with pytest.raises(ValueError, match="reward"):
            dt.select_action({"observation.state": torch.zeros(3, 3), "reward": reward})
    for target in (float("nan"), torch.zeros(2, 2)):
        with pytest.raises(ValueError, match="target_return"):
            dt.reset(target)


BAD_STATISTICS = [(f, v) for f in ("state_std", "action_std") for v in (0.0, -1.0)] + [
    (f, v) for f in ("state_std", "action_std", "state_mean", "action_mean")
    for v in (float("nan"), float("inf"))]


@pytest.mark.parametrize(("field", "value"), BAD_STATISTICS)
def test_bad_normalization_statistics_are_refused(tmp_path, field, value):
    policy = _bc()
    path = tmp_path / "bc.safetensors"
    policy.save(path)
    tensors = load_file(str(path))
    tensors[field][1] = value
    forged = tmp_path / "forged.safetensors"
    save_file(tensors, str(forged), metadata={"kind": "bc_mlp",
                                              "config": json.dumps(policy.config.__dict__)})
    with pytest.raises(ValueError, match=field) as err:
        load_policy(forged)
    assert "forged.safetensors" in str(err.value)
    getattr(policy, field)[1] = value
    with pytest.raises(ValueError, match=field):
        policy.select_action({"observation.state": torch.zeros(1, 3)})
    with pytest.raises(ValueError, match=field):
        policy.save(tmp_path / "again.safetensors")


def test_fit_normalization_floors_a_constant_feature():
    policy = BCPolicy(BCConfig(3, 2))
    states = torch.randn(40, 3)
    states[:, 1] = 5.0  # a constant feature: std 0, floored at 1e-3
    policy.fit_normalization(states, torch.randn(40, 2))
    assert float(policy.state_std[1]) == pytest.approx(1e-3)
    assert torch.isfinite(policy.select_action({"observation.state": torch.zeros(1, 3)})).all()
    with pytest.raises(ValueError, match="finite"):
        policy.fit_normalization(torch.full((4, 3), float("nan")), torch.zeros(4, 2))


# ---------------------------------------------------------------------------- policy files
def _policy(kind: str):
    return {"bc": _bc, "act": _act, "dt": _dt}[kind]()


def _actions(policy, kind: str) -> torch.Tensor:
    obs = _obs(6, 2, seed=3)
    if kind == "dt":
        policy.reset(torch.tensor([1.0, -1.0]))
        out = []
        for t, o in enumerate(obs):
            batch = {"observation.state": o}
            if t:
                batch["reward"] = torch.tensor([0.3, -0.2])
            out.append(policy.select_action(batch))
        return torch.stack(out)
    policy.reset()
    return torch.stack([policy.select_action({"observation.state": o}) for o in obs])


@pytest.mark.parametrize("kind", ["bc", "act", "dt"])
def test_valid_policy_files_round_trip_with_identical_actions(tmp_path, kind):
    policy = _policy(kind)
    path = tmp_path / f"{kind}.safetensors"
    policy.save(path)
    loaded = load_policy(path)
    assert loaded.config == policy.config
    assert torch.equal(_actions(loaded, kind), _actions(policy, kind))


def _save_forged(tmp_path, kind: str, edit) -> str:
    """A valid small file of ``kind`` whose metadata ``edit(meta)`` has rewritten."""
    policy = _policy(kind)
    path = tmp_path / "valid.safetensors"
    policy.save(path)
    tensors = load_file(str(path))
    meta = {"kind": policy.kind, "config": json.dumps(policy.config.__dict__)}
    edit(meta)
    forged = tmp_path / "forged.safetensors"
    save_file(tensors, str(forged), metadata=meta)
    return str(forged)


def _config_edit(**changes):
    def edit(meta):
        meta["config"] = json.dumps({**json.loads(meta["config"]), **changes})

    return edit


FORGERIES = [
    ("bc", _config_edit(hidden=2**16), "hidden"),
    ("bc", _config_edit(hidden=10**12), "hidden"),
    ("bc", _config_edit(layers=10**6), "layers"),
    ("bc", _config_edit(hidden="64"), "hidden"),
    ("bc", _config_edit(hidden=64.0), "hidden"),
    ("bc", _config_edit(hidden=True), "hidden"),
    ("bc", _config_edit(chunk_size=-3), "chunk_size"),
    ("bc", _config_edit(loss=1), "loss"),
    ("bc", _config_edit(extra=1), "extra"),
    ("act", _config_edit(dim=2**14), "dim"),
    ("act", _config_edit(use_latent="false"), "use_latent"),
    ("act", _config_edit(kl_weight=float("nan")), "kl_weight"),
    ("act", _config_edit(seed=2**80), "seed"),
    ("act", _config_edit(decoder_layers=10**6), "decoder_layers"),
    ("dt", _config_edit(max_ep_len=10**9), "max_ep_len"),
    ("dt", _config_edit(num_layers=2**20), "num_layers"),
    ("dt", _config_edit(rtg_scale=float("inf")), "rtg_scale"),
    ("dt", _config_edit(action_type="discrete"), "embed_action"),
    ("dt", lambda meta: meta.update(kind="dt"), "kind"),
    ("dt", lambda meta: meta.update(config="[1, 2]"), "config"),
    ("dt", lambda meta: meta.update(config="{not json"), "config"),
    ("dt", lambda meta: meta.update(config="[" * 100_000), "config"),
    ("dt", lambda meta: meta.pop("config"), "config"),
    ("bc", lambda meta: meta.update(config=json.dumps({"state_dim": 3})), "action_dim"),
]


@pytest.mark.parametrize(("kind", "edit", "key"), FORGERIES,
                         ids=[f"{k}-{key}-{i}" for i, (k, _, key) in enumerate(FORGERIES)])
def test_forged_metadata_is_refused(tmp_path, kind, edit, key):
    forged = _save_forged(tmp_path, kind, edit)
    with pytest.raises(ValueError, match=key) as err:
        load_policy(forged)
    assert "forged.safetensors" in str(err.value)


def test_truncated_and_corrupt_files_are_refused(tmp_path):
    path = tmp_path / "valid.safetensors"
    _bc().save(path)
    data = path.read_bytes()
    cases = {"truncated": data[: len(data) - 10], "header-only": data[:40], "empty": b"",
             "garbage": b"\xff" * 64, "huge-header-length": (2**62).to_bytes(8, "little")}
    for name, blob in cases.items():
        bad = tmp_path / f"{name}.safetensors"
        bad.write_bytes(blob)
        with pytest.raises(ValueError, match=name):
            load_policy(bad)
    tensors = load_file(str(path))
    tensors["net.0.weight"] = tensors["net.0.weight"].half()
    meta = {"kind": "bc_mlp", "config": json.dumps(_bc().config.__dict__)}
    save_file(tensors, str(tmp_path / "half.safetensors"), metadata=meta)
    with pytest.raises(ValueError, match="dtype"):
        load_policy(tmp_path / "half.safetensors")
    del tensors["net.0.weight"]
    save_file(tensors, str(tmp_path / "missing.safetensors"), metadata=meta)
    with pytest.raises(ValueError, match=r"net\.0\.weight"):
        load_policy(tmp_path / "missing.safetensors")


_BOMB = textwrap.dedent("""
    import json, resource, sys
    import torch
    from safetensors.torch import load_file, save_file
    from transformer_math.robotics.policies.base import load_policy
    from transformer_math.robotics.policies.bc import BCConfig, BCPolicy
    from transformer_math.robotics.policies.decision_transformer import (
        DecisionTransformer, DTConfig)
    vm = next(int(line.split()[1]) for line in open("/proc/self/status")
              if line.startswith("VmSize:")) * 1024
    limit = vm + 2 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    folder = sys.argv[1]
    cases = [(BCPolicy(BCConfig(3, 2)), {"hidden": 2**17}),
             (DecisionTransformer(DTConfig(3, 2, dim=16)), {"max_ep_len": 2**27}),
             (DecisionTransformer(DTConfig(3, 2, dim=16)), {"dim": 2**15})]
    for i, (policy, change) in enumerate(cases):
        path = f"{folder}/bomb{i}.safetensors"
        policy.save(path)
        config = {**json.loads(json.dumps(policy.config.__dict__)), **change}
        save_file(load_file(path), path, metadata={"kind": policy.kind,
                                                     "config": json.dumps(config)})
        try:
            load_policy(path)
        except ValueError as exc:
            print("refused", type(exc).__name__, exc)
        else:
            print("loaded")
""")


def test_metadata_bomb_is_refused_under_an_address_space_limit(tmp_path):
    """A forged size in a policy file's metadata is refused before anything is allocated."""
    res = subprocess.run([sys.executable, "-c", _BOMB, str(tmp_path)], capture_output=True,
                         text=True, timeout=120)
    lines = res.stdout.strip().splitlines()
    assert res.returncode == 0 and len(lines) == 3, res.stdout + res.stderr[-2000:]
    assert all(line.startswith("refused ValueError") and "bomb" in line for line in lines), lines
