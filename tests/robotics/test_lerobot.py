"""Policies in LeRobot's layout and conventions (issue 16, item 1).

Folders (``config.json`` + ``model.safetensors``) round-trip in a fresh process; the folder reader
is as strict as the single-file one; batches use LeRobot's keys and the losses ignore padded
actions; image keys are refused; policies follow their module's dtype and device; the Decision
Transformer needs an explicit target and ``predict_action_chunk`` does not advance it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from safetensors.torch import load_file, save_file

from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy
from transformer_math.robotics.policies.ar_bins import ARBinsConfig, ARBinsPolicy
from transformer_math.robotics.policies.base import POLICY_TYPES, load_policy
from transformer_math.robotics.policies.bc import BCConfig, BCPolicy
from transformer_math.robotics.policies.decision_transformer import DecisionTransformer, DTConfig
from transformer_math.robotics.policies.diffusion import DiffusionConfig, DiffusionPolicy
from transformer_math.robotics.policies.ensembling import make_executor
from transformer_math.robotics.policies.flow_matching import (
    FlowMatchingConfig,
    FlowMatchingPolicy,
)
from transformer_math.robotics.training import build_seeded

KINDS = ("act", "bc", "dt", "diffusion", "flow", "ar")


def _fit(policy):
    g = torch.Generator().manual_seed(5)
    policy.fit_normalization(torch.randn(50, 3, generator=g) * 2 + 1,
                             torch.randn(50, 2, generator=g) * 0.5 - 0.2)
    return policy


def _act(**kw) -> ACTPolicy:
    cfg = ACTConfig(3, 2, chunk_size=4, dim=16, num_heads=2, encoder_layers=1,
                    decoder_layers=1, latent_dim=4, **kw)
    return _fit(build_seeded(lambda: ACTPolicy(cfg), 0))


def _bc(**kw) -> BCPolicy:
    return _fit(build_seeded(lambda: BCPolicy(BCConfig(3, 2, chunk_size=4, hidden=16, **kw)), 1))


def _dt(**kw) -> DecisionTransformer:
    cfg = DTConfig(3, 2, context_len=4, max_ep_len=16, dim=16, dropout=0.0, **kw)
    return build_seeded(lambda: DecisionTransformer(cfg), 2).eval()


def _diffusion(**kw) -> DiffusionPolicy:
    cfg = DiffusionConfig(3, 2, chunk_size=4, dim=16, num_heads=2, num_layers=1,
                          train_steps=20, inference_steps=3, **kw)
    return _fit(build_seeded(lambda: DiffusionPolicy(cfg), 3))


def _flow(**kw) -> FlowMatchingPolicy:
    cfg = FlowMatchingConfig(3, 2, chunk_size=4, dim=16, num_heads=2, num_layers=1,
                             inference_steps=3, **kw)
    return _fit(build_seeded(lambda: FlowMatchingPolicy(cfg), 4))


def _ar(**kw) -> ARBinsPolicy:
    cfg = ARBinsConfig(3, 2, chunk_size=4, dim=16, num_heads=2, num_layers=1, bins=16, **kw)
    return _fit(build_seeded(lambda: ARBinsPolicy(cfg), 5))


def _policy(kind: str):
    return {"act": _act, "bc": _bc, "dt": _dt, "diffusion": _diffusion, "flow": _flow,
            "ar": _ar}[kind]()


_ACTIONS = textwrap.dedent("""
    import torch

    def actions(policy, kind):
        if hasattr(policy, "generator"):
            policy.generator.manual_seed(0)
        g = torch.Generator().manual_seed(3)
        obs = torch.randn(6, 2, 3, generator=g)
        if kind == "dt":
            policy.reset(torch.tensor([1.0, -1.0]))
        else:
            policy.reset()
        out = []
        for t, o in enumerate(obs):
            batch = {"observation.state": o}
            if kind == "dt" and t:
                batch["reward"] = torch.tensor([0.3, -0.2])
            out.append(policy.select_action(batch))
        return torch.stack(out)
""")
_ns: dict = {}
exec(_ACTIONS, _ns)  # the same rollout here and in the fresh process
actions = _ns["actions"]

_FRESH = _ACTIONS + textwrap.dedent("""
    import sys
    torch.set_num_threads(1)  # as in the tests (conftest): the same kernels, bit for bit
    before = sorted(m for m in sys.modules if m.startswith("transformer_math.robotics.policies."))
    from transformer_math.robotics.policies.base import load_policy
    policy = load_policy(sys.argv[1])
    torch.save({"actions": actions(policy, sys.argv[2]), "before": before,
                "type": type(policy).__name__}, sys.argv[3])
""")


@pytest.mark.parametrize("kind", KINDS)
def test_policy_folder_round_trips_in_a_fresh_process(tmp_path, kind):
    policy = _policy(kind)
    if kind == "act":
        policy.set_executor(make_executor("act_ensemble", 4, decay=0.05))
    folder = tmp_path / kind
    policy.save_pretrained(folder)
    assert sorted(os.listdir(folder)) == ["config.json", "model.safetensors"]
    config = json.loads((folder / "config.json").read_text())
    assert config["type"] == policy.kind
    assert config["input_features"] == {"observation.state": {"type": "STATE", "shape": [3]}}
    assert config["output_features"]["action"]["shape"] == [2]
    if kind != "dt":
        assert config["normalization_mapping"] == {"STATE": "MEAN_STD", "ACTION": "MEAN_STD"}
        assert config["chunk_size"] == 4
        assert "state_std" in load_file(str(folder / "model.safetensors"))
    if kind == "act":
        assert (config["n_action_steps"], config["temporal_ensemble_coeff"],
                config["temporal_ensemble_order"]) == (1, 0.05, "oldest_first")
    out = tmp_path / "out.pt"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    res = subprocess.run([sys.executable, "-c", _FRESH, str(folder), kind, str(out)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    fresh = torch.load(out)
    assert fresh["before"] == []  # nothing of the policies was imported before load_policy
    assert fresh["type"] == type(policy).__name__
    assert torch.equal(fresh["actions"], actions(policy, kind))
    loaded = type(policy).from_pretrained(folder)
    assert loaded.config == policy.config
    assert torch.equal(actions(loaded, kind), actions(policy, kind))


def test_from_pretrained_checks_the_class_and_old_files_still_load(tmp_path):
    _act().save_pretrained(tmp_path / "act")
    with pytest.raises(TypeError, match="act"):
        BCPolicy.from_pretrained(tmp_path / "act")
    bc = _bc()
    bc.save(tmp_path / "bc.safetensors")  # the single-file format
    assert torch.equal(actions(BCPolicy.from_pretrained(tmp_path / "bc.safetensors"), "bc"),
                       actions(bc, "bc"))
    with pytest.raises(ValueError, match="existing policy folder or file"):
        load_policy(tmp_path / "nothing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="folder"):
        bc.save_pretrained(tmp_path / "file")


def test_policy_types_are_a_static_table():
    """Every policy class is in POLICY_TYPES under its kind (no import side effect needed)."""
    for cls in (ACTPolicy, BCPolicy, DecisionTransformer, DiffusionPolicy, FlowMatchingPolicy,
                ARBinsPolicy):
        assert POLICY_TYPES[cls.kind] == f"{cls.__module__}:{cls.__name__}"


# ---------------------------------------------------------------------------- strict folders
def _edit_config(folder, **changes):
    path = folder / "config.json"
    raw = json.loads(path.read_text())
    for k, v in changes.items():
        if v is _DROP:
            raw.pop(k)
        else:
            raw[k] = v
    path.write_text(json.dumps(raw))


_DROP = object()

FOLDER_FORGERIES = [
    ("act", {"chunk_size": "4"}, "chunk_size"),
    ("act", {"dim": 16.0}, "dim"),
    ("act", {"use_latent": "true"}, "use_latent"),
    ("act", {"dim": 2**21}, "dim"),
    ("act", {"decoder_layers": 10**6}, "decoder_layers"),
    ("act", {"type": "ACT"}, "type"),
    ("act", {"type": _DROP}, "type"),
    ("act", {"extra": 1}, "extra"),
    ("act", {"state_dim": _DROP}, "state_dim"),
    ("act", {"input_features": {"observation.state": {"type": "STATE", "shape": [4]}}},
     "input_features"),
    ("act", {"output_features": _DROP}, "output_features"),
    ("act", {"normalization_mapping": {"STATE": "MIN_MAX", "ACTION": "MEAN_STD"}},
     "normalization_mapping"),
    ("act", {"n_action_steps": 5}, "n_action_steps"),
    ("act", {"n_action_steps": True}, "n_action_steps"),
    ("act", {"n_action_steps": _DROP}, "n_action_steps"),
    ("act", {"temporal_ensemble_coeff": -1.0}, "temporal_ensemble_coeff"),
    ("act", {"temporal_ensemble_coeff": 0.01}, "n_action_steps"),  # ensemble needs 1 step
    ("act", {"temporal_ensemble_order": "oldest_first"}, "temporal_ensemble_order"),
    ("act", {"dim": 32}, "dtype or shape"),  # a valid config that does not fit the weights
    ("bc", {"hidden": 32}, "dtype or shape"),
    ("dt", {"n_action_steps": 1}, "executor"),
    ("dt", {"action_type": "discrete"}, "output_features"),
    ("dt", {"max_ep_len": 10**9}, "max_ep_len"),
    ("diffusion", {"inference_steps": 0}, "inference_steps"),
    ("diffusion", {"inference_steps": 21}, "inference_steps"),  # > train_steps
    ("diffusion", {"clip_sample": -1.0}, "clip_sample"),
    ("diffusion", {"num_layers": 2}, "missing"),
    ("flow", {"inference_steps": 10**6}, "inference_steps"),
    ("ar", {"sampling": "beam"}, "sampling"),
    ("ar", {"bins": 32}, "dtype or shape"),
    ("ar", {"temperature": 0.0}, "temperature"),
]


@pytest.mark.parametrize(("kind", "changes", "key"), FOLDER_FORGERIES,
                         ids=[f"{k}-{key}-{i}" for i, (k, _, key) in enumerate(FOLDER_FORGERIES)])
def test_forged_folder_configs_are_refused(tmp_path, kind, changes, key):
    folder = tmp_path / "policy"
    _policy(kind).save_pretrained(folder)
    _edit_config(folder, **changes)
    with pytest.raises(ValueError, match=key) as err:
        load_policy(folder)
    assert "config.json" in str(err.value) or "model.safetensors" in str(err.value)


def test_folder_files_must_stay_inside_the_folder(tmp_path):
    outside = tmp_path / "outside"
    _act().save_pretrained(outside)
    for name in ("config.json", "model.safetensors"):
        folder = tmp_path / f"linked-{name}"
        _act().save_pretrained(folder)
        os.remove(folder / name)
        os.symlink(outside / name, folder / name)
        with pytest.raises(ValueError, match="outside"):
            load_policy(folder)
    folder = tmp_path / "missing"
    _act().save_pretrained(folder)
    os.remove(folder / "model.safetensors")
    with pytest.raises(ValueError, match=r"model\.safetensors"):
        load_policy(folder)
    os.mkdir(folder / "model.safetensors")
    with pytest.raises(ValueError, match="regular file"):
        load_policy(folder)
    inner = tmp_path / "inner"  # a link that stays inside the folder is fine
    _act().save_pretrained(inner)
    os.rename(inner / "model.safetensors", inner / "weights.bin")
    os.symlink("weights.bin", inner / "model.safetensors")
    assert isinstance(load_policy(inner), ACTPolicy)


def test_corrupt_folder_files_are_refused(tmp_path):
    folder = tmp_path / "policy"
    _bc().save_pretrained(folder)
    good = (folder / "config.json").read_bytes()
    for blob, what in ((b"{not json", "JSON"), (b"[1, 2]", "object"), (b"[" * 100_000, "JSON"),
                       (b"\xff\xfe", "JSON"), (b" " * (2**20 + 1), "bytes")):
        (folder / "config.json").write_bytes(blob)
        with pytest.raises(ValueError, match=what):
            load_policy(folder)
    (folder / "config.json").write_bytes(good)
    weights = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(weights[:-10])
    with pytest.raises(ValueError, match="safetensors"):
        load_policy(folder)
    _bc().save_pretrained(folder)
    tensors = load_file(str(folder / "model.safetensors"))
    tensors["state_std"][0] = 0.0
    save_file(tensors, str(folder / "model.safetensors"))
    with pytest.raises(ValueError, match="state_std"):
        load_policy(folder)


_FOLDER_BOMB = textwrap.dedent("""
    import json, resource, sys
    from transformer_math.robotics.policies.base import load_policy
    from transformer_math.robotics.policies.bc import BCConfig, BCPolicy
    vm = next(int(line.split()[1]) for line in open("/proc/self/status")
              if line.startswith("VmSize:")) * 1024
    limit = vm + 2 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    folder = sys.argv[1]
    BCPolicy(BCConfig(3, 2)).save_pretrained(folder)
    raw = json.load(open(folder + "/config.json"))
    raw["hidden"] = 2**17  # 2**34 weights in the second layer if it were built
    json.dump(raw, open(folder + "/config.json", "w"))
    try:
        load_policy(folder)
    except ValueError as exc:
        print("refused", exc)
    else:
        print("loaded")
""")


def test_folder_size_bomb_is_refused_under_an_address_space_limit(tmp_path):
    res = subprocess.run([sys.executable, "-c", _FOLDER_BOMB, str(tmp_path / "bomb")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.startswith("refused"), res.stdout + res.stderr


# ---------------------------------------------------------------------------- LeRobot batches
def _chunk_batch(seed: int = 0, b: int = 5):
    g = torch.Generator().manual_seed(seed)
    pad = torch.zeros(b, 4, dtype=torch.bool)
    pad[0, 2:] = pad[1, 1:] = pad[b - 2, 3:] = True
    return {"observation.state": torch.randn(b, 3, generator=g),
            "action": torch.randn(b, 4, 2, generator=g), "action_is_pad": pad}


def _loss(policy, batch) -> float:
    if hasattr(policy, "generator"):
        policy.generator.manual_seed(0)
    return float(policy(batch)[0].detach())


@pytest.mark.parametrize("make", [_bc, lambda: _bc(loss="mse"), _act,
                                  lambda: _act(use_latent=False), _diffusion, _flow, _ar],
                         ids=["bc-l1", "bc-mse", "act", "act-no-latent", "diffusion", "flow",
                              "ar"])
def test_loss_ignores_padded_actions(make):
    policy = make()
    batch = _chunk_batch()
    base = _loss(policy, batch)
    for fill in (1e3, -7.0, float("nan")):
        forged = dict(batch, action=batch["action"].masked_fill(batch["action_is_pad"][..., None],
                                                                fill))
        assert _loss(policy, forged) == pytest.approx(base, rel=1e-6, abs=1e-7)
    no_pad = {k: v for k, v in batch.items() if k != "action_is_pad"}
    assert _loss(policy, no_pad) != pytest.approx(base, rel=1e-3)  # padding did matter
    # all steps valid: the mask changes nothing
    full = dict(no_pad, action_is_pad=torch.zeros(5, 4, dtype=torch.bool))
    assert _loss(policy, full) == pytest.approx(_loss(policy, no_pad), rel=1e-6)


@pytest.mark.parametrize("make", [_bc, lambda: _act(use_latent=False)], ids=["bc", "act"])
def test_padded_loss_is_the_loss_on_the_valid_steps(make):
    """Deterministic policies: the padded loss is the mean error over the valid steps only."""
    policy = make()
    batch = _chunk_batch()
    with torch.no_grad():
        pred = policy.predict_action_chunk(batch)
    valid = ~batch["action_is_pad"]
    err = (pred - batch["action"]) / policy.action_std  # in normalised units
    assert _loss(policy, batch) == pytest.approx(float(err.abs()[valid].mean()), rel=1e-5)


def test_action_is_pad_is_checked():
    policy = _bc()
    batch = _chunk_batch()
    for bad in (batch["action_is_pad"].float(), batch["action_is_pad"][:, :3],
                torch.ones(5, 4, dtype=torch.bool)):
        with pytest.raises(ValueError, match="action_is_pad"):
            policy(dict(batch, action_is_pad=bad))


def test_dt_loss_takes_action_is_pad():
    dt = _dt()
    g = torch.Generator().manual_seed(0)
    batch = {"observation.state": torch.randn(2, 4, 3, generator=g),
             "action": torch.rand(2, 4, 2, generator=g) - 0.5,
             "return_to_go": torch.randn(2, 4, generator=g),
             "timestep": torch.arange(4).expand(2, -1)}
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    with_mask = float(dt({**batch, "mask": mask})[0].detach())
    assert float(dt({**batch, "action_is_pad": ~mask})[0].detach()) == with_mask
    with pytest.raises(ValueError, match="not both"):
        dt({**batch, "mask": mask, "action_is_pad": ~mask})


@pytest.mark.parametrize("kind", KINDS)
def test_image_keys_are_refused_not_ignored(kind):
    policy = _policy(kind)
    if kind == "dt":
        policy.reset(1.0)
    batch = {"observation.state": torch.zeros(1, 3),
             "observation.images.top": torch.zeros(1, 3, 8, 8)}
    with pytest.raises(ValueError, match=r"observation\.images\.top"):
        policy.select_action(batch)
    with pytest.raises(ValueError, match="image"):
        policy.predict_action_chunk(batch)


# ---------------------------------------------------------------------------- dtype and device
@pytest.mark.parametrize("kind", KINDS)
def test_policies_follow_their_dtype(kind):
    policy = _policy(kind)
    if kind == "act":
        policy = _act(latent_sampling="sample")  # noise is drawn too
    reference = actions(policy, kind)
    policy.double()
    out = actions(policy, kind)
    assert out.dtype == torch.float64
    assert torch.allclose(out, reference.double(), atol=1e-5)
    if kind != "dt":
        batch = {k: (v.double() if v.is_floating_point() else v)
                 for k, v in _chunk_batch().items()}
        loss, _ = policy(batch)
        assert loss.dtype == torch.float64


@pytest.mark.parametrize("kind", KINDS)
def test_policies_create_no_tensor_off_their_device(kind):
    """On the meta device, a tensor created without ``device=`` (a CPU one) raises."""
    with torch.device("meta"):
        policy = {"act": lambda: ACTPolicy(ACTConfig(3, 2, chunk_size=4, dim=16, num_heads=2,
                                                      latent_sampling="sample")),
                  "bc": lambda: BCPolicy(BCConfig(3, 2, chunk_size=4)),
                  "dt": lambda: DecisionTransformer(DTConfig(3, 2, context_len=4)),
                  "diffusion": lambda: DiffusionPolicy(DiffusionConfig(3, 2, chunk_size=4,
                                                                       dim=16, num_heads=2)),
                  "flow": lambda: FlowMatchingPolicy(FlowMatchingConfig(3, 2, chunk_size=4,
                                                                        dim=16, num_heads=2)),
                  "ar": lambda: ARBinsPolicy(ARBinsConfig(3, 2, chunk_size=4, dim=16,
                                                          num_heads=2))}[kind]()
    state = torch.zeros(2, 3, device="meta")
    if kind == "dt":
        policy.reset(1.0)
        assert policy.predict_action_chunk({"observation.state": state}).device.type == "meta"
        policy.select_action({"observation.state": state})
        out = policy.select_action({"observation.state": state,
                                    "reward": torch.zeros(2, device="meta")})
        assert out.device.type == "meta"
        return
    for mode in ("open_loop", "act_ensemble"):
        policy.set_executor(make_executor(mode, 4))
        for _ in range(3):
            assert policy.select_action({"observation.state": state}).device.type == "meta"
    batch = {k: v.to("meta") for k, v in _chunk_batch(b=2).items()}
    loss, _ = policy(batch)
    assert loss.device.type == "meta"
    del batch["action_is_pad"]
    assert policy(batch)[0].device.type == "meta"


# ---------------------------------------------------------------------------- DT rollouts
def test_dt_reset_needs_an_explicit_target():
    dt = _dt()
    with pytest.raises(RuntimeError, match="target_return"):
        dt.select_action({"observation.state": torch.zeros(1, 3)})  # never reset
    with pytest.raises(ValueError, match="target_return"):
        dt.reset()
    dt.reset(target_return=2.0)
    dt.select_action({"observation.state": torch.zeros(1, 3)})
    assert dt.conditioning_returns.tolist() == [[2.0]]


def test_dt_predict_action_chunk_does_not_advance_the_episode():
    dt, twin = _dt(), _dt()
    g = torch.Generator().manual_seed(1)
    obs = torch.randn(5, 2, 3, generator=g)
    dt.reset(torch.tensor([3.0, 1.0]))
    twin.reset(torch.tensor([3.0, 1.0]))
    for t, o in enumerate(obs):
        batch = {"observation.state": o}
        if t:
            batch["reward"] = torch.tensor([0.5, 0.1])
        history = dt.conditioning_returns.clone()
        chunk = dt.predict_action_chunk(batch)
        chunk_again = dt.predict_action_chunk(batch)
        assert torch.equal(dt.conditioning_returns, history)  # not advanced
        assert chunk.shape == (2, 1, 2) and torch.equal(chunk, chunk_again)
        action = dt.select_action(batch)
        assert torch.equal(chunk[:, 0], action)
        assert torch.equal(action, twin.select_action(batch))  # as if never asked
    assert dt.conditioning_returns.shape == (2, 5)


# ---------------------------------------------------------------------------- ACT with cameras
def _camera_act(**kw) -> ACTPolicy:
    cfg = ACTConfig(3, 2, chunk_size=4, dim=16, num_heads=2, encoder_layers=1, decoder_layers=1,
                    latent_dim=4, cameras="top,wrist", image_channels=3, image_height=12,
                    image_width=10, **kw)
    return _fit(build_seeded(lambda: ACTPolicy(cfg), 0))


def _camera_batch(b: int = 2, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return {"observation.state": torch.randn(b, 3, generator=g),
            "observation.images.top": torch.rand(b, 3, 12, 10, generator=g),
            "observation.images.wrist": torch.rand(b, 3, 12, 10, generator=g)}


def test_act_takes_camera_images_through_its_encoder():
    policy = _camera_act()
    batch = _camera_batch()
    chunk = policy.predict_action_chunk(batch)
    assert chunk.shape == (2, 4, 2)
    other = dict(batch, **{"observation.images.wrist": 1 - batch["observation.images.wrist"]})
    assert not torch.allclose(policy.predict_action_chunk(other), chunk)  # the image is used
    policy.reset()
    assert policy.select_action(batch).shape == (2, 2)
    g = torch.Generator().manual_seed(1)
    train = dict(batch, action=torch.randn(2, 4, 2, generator=g))
    loss, _ = policy(train)
    loss.backward()
    assert policy.image_encoder.conv1.weight.grad.abs().sum() > 0  # trained end to end
    assert _camera_act().image_encoder.conv1.weight.equal(policy.image_encoder.conv1.weight)


def test_act_camera_batches_are_checked():
    policy = _camera_act()
    batch = _camera_batch()
    with pytest.raises(ValueError, match=r"observation\.images\.wrist"):
        policy.predict_action_chunk({k: v for k, v in batch.items() if "wrist" not in k})
    with pytest.raises(ValueError, match=r"observation\.images\.side"):
        policy.predict_action_chunk(dict(batch, **{"observation.images.side": torch.zeros(2)}))
    for bad in (torch.rand(2, 3, 10, 12), torch.rand(2, 1, 12, 10),
                torch.zeros(2, 3, 12, 10, dtype=torch.uint8)):
        with pytest.raises(ValueError, match="shape"):
            policy.predict_action_chunk(dict(batch, **{"observation.images.top": bad}))
    nan = batch["observation.images.top"].clone()
    nan[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        policy.predict_action_chunk(dict(batch, **{"observation.images.top": nan}))
    for cameras in ("top,top", "a b", "x/y", ",".join(f"c{i}" for i in range(9))):
        with pytest.raises(ValueError, match="cameras"):
            ACTConfig(3, 2, cameras=cameras)


def test_camera_act_folder_round_trips(tmp_path):
    policy = _camera_act()
    policy.save_pretrained(tmp_path / "cam")
    config = json.loads((tmp_path / "cam" / "config.json").read_text())
    assert config["input_features"]["observation.images.top"] == {"type": "VISUAL",
                                                                  "shape": [3, 12, 10]}
    assert config["normalization_mapping"]["VISUAL"] == "IDENTITY"
    loaded = load_policy(tmp_path / "cam")
    batch = _camera_batch()
    assert torch.equal(loaded.predict_action_chunk(batch), policy.predict_action_chunk(batch))
    _edit_config(tmp_path / "cam", cameras="top")  # one camera fewer than the weights hold
    with pytest.raises(ValueError, match=r"input_features|mem_pos"):
        load_policy(tmp_path / "cam")


def test_camera_act_follows_dtype_and_meta_device():
    policy = _camera_act().double()
    batch = {k: v.double() for k, v in _camera_batch().items()}
    assert policy.predict_action_chunk(batch).dtype == torch.float64
    with torch.device("meta"):
        meta = ACTPolicy(ACTConfig(3, 2, chunk_size=4, dim=16, num_heads=2, cameras="top",
                                   image_height=12, image_width=10))
    out = meta.predict_action_chunk({"observation.state": torch.zeros(2, 3, device="meta"),
                                     "observation.images.top": torch.zeros(2, 3, 12, 10,
                                                                           device="meta")})
    assert out.device.type == "meta" and out.shape == (2, 4, 2)
