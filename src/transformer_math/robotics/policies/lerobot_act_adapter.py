"""Read a LeRobot ACT folder into :class:`LeRobotACTPolicy`, and write one back.

A LeRobot (0.4.x) policy folder, as ``ACTPolicy.save_pretrained`` and the processors'
``save_pretrained`` write it (``lerobot/policies/pretrained.py``,
``lerobot/processor/pipeline.py``):
- ``config.json``: ``"type": "act"``, ``input_features`` / ``output_features`` (type, shape),
  ``normalization_mapping``, the ACT sizes (``dim_model``, ``n_heads``, ``dim_feedforward``,
  ``n_encoder_layers``, ``n_decoder_layers``, ``n_vae_encoder_layers``, ``latent_dim``,
  ``chunk_size``, ``n_action_steps``, ``temporal_ensemble_coeff``, ...);
- ``model.safetensors``: the state dict under ``model.`` (attention as PyTorch's
  ``nn.MultiheadAttention``: one packed ``in_proj_weight`` (3d, d) = [W_q; W_k; W_v]);
- ``policy_preprocessor.json`` / ``policy_postprocessor.json``: the pipelines; the normaliser
  step names its statistics file (``<feature>.mean`` / ``<feature>.std`` tensors).
Config map (LeRobot -> project): dim_model -> dim, n_heads -> num_heads, n_encoder_layers ->
encoder_layers, n_decoder_layers -> decoder_layers, n_vae_encoder_layers -> vae_encoder_layers,
use_vae, latent_dim, kl_weight, dropout, pre_norm, chunk_size, vision_backbone; the features
give state_dim, env_state_dim, action_dim, cameras and the image shape; n_action_steps /
temporal_ensemble_coeff the executor (ensembling oldest-first, as LeRobot's).
Key map: ``model.`` dropped; in each block ``self_attn`` -> ``attn`` and ``multihead_attn`` ->
``cross_attn`` (the packed projection split into q/k/v), ``linear1``/``linear2`` ->
``ffn.fc_in``/``ffn.fc_out``, ``norm1`` -> ``attn_norm``, the encoder's ``norm2`` and the
decoder's ``norm3`` -> ``ffn_norm``, the decoder's ``norm2`` -> ``cross_norm``, a stack's
``norm`` -> ``final_norm``; the backbone keeps torchvision's names.
Refused with a ``ValueError`` naming the file: no ``observation.state`` (LeRobot allows an
image-only ACT; the project's chunk policies need a state), ``n_obs_steps`` != 1, an FFN other
than ReLU, ``replace_final_stride_with_dilation``, cameras of different shapes, a normalisation
mode other than MEAN_STD (IDENTITY for cameras), a renaming or unknown processor step.
Written back: ``pretrained_backbone_weights`` is null (the weights are in the file; LeRobot would
otherwise download ImageNet weights when it builds the policy) and ``device`` null (LeRobot picks
one).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save

from transformer_math import safe_write, typed_json
from transformer_math.nn.init import no_init_draws
from transformer_math.robotics.policies.act_lerobot import (
    ENV_STATE_KEY,
    NORM_EPS,
    LeRobotACTConfig,
    LeRobotACTPolicy,
)
from transformer_math.robotics.policies.act_resnet import RESNET_STAGES
from transformer_math.robotics.policies.base import ACTION_KEY, IMAGES_PREFIX, STATE_KEY

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
PREPROCESSOR = "policy_preprocessor.json"
POSTPROCESSOR = "policy_postprocessor.json"
PRE_STATS = "policy_preprocessor_step_3_normalizer_processor.safetensors"
POST_STATS = "policy_postprocessor_step_0_unnormalizer_processor.safetensors"
_STACKS = ("vae_encoder", "encoder", "decoder")
_LAYER = re.compile(r"^(vae_encoder|encoder|decoder)\.layers\.(\d+)\.(.+)$")
_ENCODER_PARTS = {"linear1": "ffn.fc_in", "linear2": "ffn.fc_out", "norm1": "attn_norm",
                  "norm2": "ffn_norm", "self_attn.out_proj": "attn.out_proj"}
_DECODER_PARTS = {"linear1": "ffn.fc_in", "linear2": "ffn.fc_out", "norm1": "attn_norm",
                  "norm2": "cross_norm", "norm3": "ffn_norm",
                  "self_attn.out_proj": "attn.out_proj",
                  "multihead_attn.out_proj": "cross_attn.out_proj"}
_ATTENTIONS = {"self_attn": "attn", "multihead_attn": "cross_attn"}


_STATS = frozenset({"state_mean", "state_std", "action_mean", "action_std", "env_state_mean",
                    "env_state_std"})


def _is_stat(name: str) -> bool:
    """A normalisation buffer of the policy (LeRobot keeps these in the processors' files)."""
    return name in _STATS or name.startswith(("image_mean_", "image_std_"))


def _fail(where: str, message: str) -> None:
    raise ValueError(f"{where}: {message}")


# ----------------------------------------------------------------------------------- tensors
def _parts(stack: str) -> dict[str, str]:
    return _DECODER_PARTS if stack == "decoder" else _ENCODER_PARTS


def project_state_dict(tensors: Mapping[str, torch.Tensor], where: str) -> dict[str, torch.Tensor]:
    """LeRobot's ``model.*`` tensors under the project's names (module docstring, key map)."""
    out: dict[str, torch.Tensor] = {}
    for key, t in tensors.items():
        if not key.startswith("model."):
            _fail(where, f"tensor {key!r} is not under 'model.' (not a LeRobot ACT file)")
        name = key[len("model."):]
        m = _LAYER.match(name)
        if name in (f"{s}.norm.{p}" for s in _STACKS for p in ("weight", "bias")):
            out[name.replace(".norm.", ".final_norm.")] = t
        elif m is None:
            out[name] = t
        else:
            stack, i, rest = m.groups()
            head, _, leaf = rest.rpartition(".")
            prefix = f"{stack}.layers.{i}."
            if head in _ATTENTIONS and leaf in ("in_proj_weight", "in_proj_bias"):
                q, k, v = t.chunk(3, dim=0)
                kind = "weight" if leaf == "in_proj_weight" else "bias"
                for proj, part in zip(("q_proj", "k_proj", "v_proj"), (q, k, v), strict=True):
                    out[f"{prefix}{_ATTENTIONS[head]}.{proj}.{kind}"] = part.clone()
            elif head in _parts(stack):
                out[f"{prefix}{_parts(stack)[head]}.{leaf}"] = t
            else:
                _fail(where, f"unknown tensor {key!r}")
    return out


def lerobot_state_dict(policy: LeRobotACTPolicy) -> dict[str, torch.Tensor]:
    """The policy's network tensors under LeRobot's names (the inverse of
    :func:`project_state_dict`; normalisation statistics are left out: LeRobot keeps them in
    the processors' files)."""
    own = {k: v.detach().cpu().contiguous() for k, v in policy.state_dict().items()
           if not _is_stat(k)}
    out: dict[str, torch.Tensor] = {}
    for name, t in own.items():
        m = _LAYER.match(name)
        if m is None:
            out["model." + name.replace(".final_norm.", ".norm.")] = t
            continue
        stack, i, rest = m.groups()
        head, _, leaf = rest.rpartition(".")
        prefix = f"model.{stack}.layers.{i}."
        attn = next((lr for lr, pr in _ATTENTIONS.items() if head == f"{pr}.q_proj"), None)
        if attn is not None:
            pr = _ATTENTIONS[attn]
            packed = torch.cat([own[f"{stack}.layers.{i}.{pr}.{p}.{leaf}"]
                                for p in ("q_proj", "k_proj", "v_proj")])
            out[f"{prefix}{attn}.in_proj_{leaf}"] = packed
        elif head.endswith((".k_proj", ".v_proj")):
            continue  # packed with q_proj
        else:
            lr_name = next(lr for lr, pr in _parts(stack).items() if pr == head)
            out[f"{prefix}{lr_name}.{leaf}"] = t
    return out


# ------------------------------------------------------------------------------------ config
def _features(raw: dict[str, Any], where: str) -> tuple[dict[str, list[int]], list[int]]:
    inputs = typed_json.expect_dict(raw.get("input_features"), f"input_features in {where}")
    outputs = typed_json.expect_dict(raw.get("output_features"), f"output_features in {where}")
    shapes: dict[str, list[int]] = {}
    for key, feature in inputs.items():
        feature = typed_json.expect_dict(feature, f"input_features.{key} in {where}")
        shape = typed_json.expect_list(feature.get("shape"), f"input_features.{key}.shape")
        shapes[key] = [typed_json.expect_int(n, f"input_features.{key}.shape in {where}",
                                             minimum=1, maximum=1 << 20) for n in shape]
    if set(outputs) != {ACTION_KEY}:
        _fail(where, f"output_features must be exactly {ACTION_KEY!r}, got {sorted(outputs)}")
    action = typed_json.expect_dict(outputs[ACTION_KEY], f"output_features.action in {where}")
    action_shape = typed_json.expect_list(action.get("shape"), "output_features.action.shape")
    return shapes, [typed_json.expect_int(n, f"output_features.action.shape in {where}",
                                          minimum=1) for n in action_shape]


def config_from_lerobot(raw: dict[str, Any], where: str, loss_reduction: str = "lerobot"
                        ) -> tuple[LeRobotACTConfig, dict[str, Any]]:
    """(project config, executor settings) from a LeRobot ACT ``config.json`` object."""
    if raw.get("type") != "act":
        _fail(where, f"type must be 'act' (a LeRobot ACT policy), got {raw.get('type')!r}")
    shapes, action = _features(raw, where)
    if STATE_KEY not in shapes or len(shapes[STATE_KEY]) != 1:
        _fail(where, f"needs a 1-D {STATE_KEY!r} input feature (an ACT without the robot "
                     "state is not supported), got " + str(sorted(shapes)))
    env = shapes.get(ENV_STATE_KEY, [0])
    cams = [k for k in shapes if k.startswith(IMAGES_PREFIX)]
    other = set(shapes) - {STATE_KEY, ENV_STATE_KEY, *cams}
    if other or len(action) != 1 or len(env) != 1:
        _fail(where, f"unsupported features {sorted(other)} (or a non-1-D action/env state)")
    image = shapes[cams[0]] if cams else [3, 96, 96]
    if any(shapes[c] != image for c in cams) or len(image) != 3:
        _fail(where, f"every camera must have one (C, H, W) shape, got "
                     f"{ {c: shapes[c] for c in cams} }")

    def get(name: str, kind: type) -> Any:
        value = raw.get(name)
        what = f"{name} in {where}"
        if kind is bool:
            return typed_json.expect_bool(value, what)
        if kind is float:
            return typed_json.expect_float(value, what, minimum=0.0)
        if kind is str:
            return typed_json.expect_str(value, what)
        return typed_json.expect_int(value, what, minimum=1, maximum=1 << 20)

    if get("n_obs_steps", int) != 1:
        _fail(where, "n_obs_steps must be 1 (LeRobot's ACT supports only 1)")
    if get("feedforward_activation", str) != "relu":
        _fail(where, f"feedforward_activation must be 'relu', got "
                     f"{raw.get('feedforward_activation')!r}")
    if raw.get("replace_final_stride_with_dilation"):
        _fail(where, "replace_final_stride_with_dilation is not supported (ResNet-18/34 blocks "
                     "refuse dilation in torchvision too)")
    backbone = get("vision_backbone", str)
    if backbone not in RESNET_STAGES:
        _fail(where, f"vision_backbone must be one of {sorted(RESNET_STAGES)}, got {backbone!r}")
    config = LeRobotACTConfig(
        state_dim=shapes[STATE_KEY][0], action_dim=action[0], chunk_size=get("chunk_size", int),
        env_state_dim=env[0], cameras=",".join(c[len(IMAGES_PREFIX):] for c in cams),
        image_channels=image[0], image_height=image[1], image_width=image[2],
        vision_backbone=backbone, dim=get("dim_model", int), num_heads=get("n_heads", int),
        dim_feedforward=get("dim_feedforward", int), encoder_layers=get("n_encoder_layers", int),
        decoder_layers=get("n_decoder_layers", int),
        vae_encoder_layers=get("n_vae_encoder_layers", int), use_vae=get("use_vae", bool),
        latent_dim=get("latent_dim", int), kl_weight=get("kl_weight", float),
        dropout=get("dropout", float), pre_norm=get("pre_norm", bool),
        loss_reduction=loss_reduction)
    steps = get("n_action_steps", int)
    coeff = raw.get("temporal_ensemble_coeff")
    if coeff is not None:
        coeff = typed_json.expect_float(coeff, f"temporal_ensemble_coeff in {where}")
    if steps > config.chunk_size or (coeff is not None and steps != 1):
        _fail(where, f"n_action_steps={steps} must be <= chunk_size and 1 with ensembling")
    settings = {"n_action_steps": steps, "temporal_ensemble_coeff": coeff,
                "temporal_ensemble_order": None if coeff is None else "oldest_first"}
    return config, settings


def _norm_modes(config: LeRobotACTConfig) -> dict[str, str]:
    modes = {"STATE": "MEAN_STD", "ACTION": "MEAN_STD"}
    if config.env_state_dim:
        modes["ENV"] = "MEAN_STD"
    if config.camera_names:
        modes["VISUAL"] = "MEAN_STD"
    return modes


def _feature_types(config: LeRobotACTConfig) -> dict[str, str]:
    types = {STATE_KEY: "STATE"}
    if config.env_state_dim:
        types[ENV_STATE_KEY] = "ENV"
    types.update({IMAGES_PREFIX + n: "VISUAL" for n in config.camera_names})
    return types


# ------------------------------------------------------------------------------- statistics
def _read_stats(folder: Path, pipeline: str, step_name: str) -> tuple[dict[str, str],
                                                                       dict[str, torch.Tensor]]:
    """(norm_map, tensors) of the normaliser step of ``folder/pipeline``."""
    where = str(folder / pipeline)
    path = folder / pipeline
    if not path.is_file():
        _fail(where, "missing (LeRobot keeps the normalisation statistics in the processors)")
    raw = typed_json.expect_dict(typed_json.loads(path.read_bytes(), where), where)
    found = None
    for step in typed_json.expect_list(raw.get("steps"), f"steps in {where}"):
        step = typed_json.expect_dict(step, f"a step of {where}")
        name = step.get("registry_name")
        cfg = typed_json.expect_dict(step.get("config", {}), f"{name} config in {where}")
        if name == "rename_observations_processor":
            if cfg.get("rename_map"):
                _fail(where, f"a non-empty rename_map {cfg['rename_map']} is not supported: "
                             "rename the batch keys yourself")
        elif name == step_name:
            found = step
            eps = typed_json.expect_float(cfg.get("eps", NORM_EPS), f"eps in {where}")
            if eps != NORM_EPS:
                _fail(where, f"normaliser eps must be {NORM_EPS}, got {eps}")
        elif name not in ("to_batch_processor", "device_processor"):
            _fail(where, f"unsupported processor step {name!r}")
    if found is None:
        _fail(where, f"no {step_name!r} step")
    assert found is not None
    norm_map = typed_json.expect_dict(found["config"].get("norm_map"), f"norm_map in {where}")
    state_file = typed_json.expect_str(found.get("state_file"), f"state_file in {where}")
    stats_path = folder / state_file
    if Path(state_file).name != state_file or not stats_path.is_file():
        _fail(where, f"state_file {state_file!r} must be a file beside it")
    try:
        tensors = load_file(str(stats_path))
    except Exception as exc:  # safetensors' SafetensorError
        _fail(str(stats_path), f"cannot read its tensors: {exc}")
    return {str(k): str(v) for k, v in norm_map.items()}, tensors


def _stat(tensors: Mapping[str, torch.Tensor], key: str, part: str, shape: tuple[int, ...],
          where: str) -> torch.Tensor:
    name = f"{key}.{part}"
    if name not in tensors:
        _fail(where, f"no {name!r} statistics")
    t = tensors[name].to(torch.float32)
    if tuple(t.shape) != shape:
        _fail(where, f"{name} must have shape {shape}, got {tuple(t.shape)}")
    return t


def _load_stats(policy: LeRobotACTPolicy, folder: Path) -> None:
    c = policy.config
    where = str(folder / PREPROCESSOR)
    modes, pre = _read_stats(folder, PREPROCESSOR, "normalizer_processor")
    _, post = _read_stats(folder, POSTPROCESSOR, "unnormalizer_processor")
    for ftype in ("STATE", "ENV", "ACTION") if c.env_state_dim else ("STATE", "ACTION"):
        if modes.get(ftype) != "MEAN_STD":
            _fail(where, f"normalisation of {ftype} must be MEAN_STD, got {modes.get(ftype)!r}")
    with torch.no_grad():
        policy.state_mean.copy_(_stat(pre, STATE_KEY, "mean", (c.state_dim,), where))
        policy.state_std.copy_(_stat(pre, STATE_KEY, "std", (c.state_dim,), where))
        post_where = str(folder / POSTPROCESSOR)
        policy.action_mean.copy_(_stat(post, ACTION_KEY, "mean", (c.action_dim,), post_where))
        policy.action_std.copy_(_stat(post, ACTION_KEY, "std", (c.action_dim,), post_where))
        if c.env_state_dim:
            shape = (c.env_state_dim,)
            policy.env_state_mean.copy_(_stat(pre, ENV_STATE_KEY, "mean", shape, where))
            policy.env_state_std.copy_(_stat(pre, ENV_STATE_KEY, "std", shape, where))
        visual = modes.get("VISUAL")
        if c.camera_names and visual not in ("MEAN_STD", "IDENTITY"):
            _fail(where, f"normalisation of VISUAL must be MEAN_STD or IDENTITY, got {visual!r}")
        for name in c.camera_names if visual == "MEAN_STD" else ():
            shape = (c.image_channels, 1, 1)
            key = IMAGES_PREFIX + name
            getattr(policy, f"image_mean_{name}").copy_(_stat(pre, key, "mean", shape, where))
            getattr(policy, f"image_std_{name}").copy_(_stat(pre, key, "std", shape, where))


# ------------------------------------------------------------------------------- read/write
def read_lerobot_act(folder: str | Path, *, loss_reduction: str = "lerobot"
                     ) -> LeRobotACTPolicy:
    """The LeRobot ACT policy saved in ``folder`` (module docstring), in eval mode.

    ``loss_reduction``: the L1 mean over padded chunks for further training (``"lerobot"``,
    LeRobot's; ``"valid"``, the project's)."""
    folder = Path(folder)
    where = str(folder / CONFIG)
    if not (folder / CONFIG).is_file():
        _fail(where, "missing: not a LeRobot policy folder")
    raw = typed_json.expect_dict(typed_json.loads((folder / CONFIG).read_bytes(), where), where)
    config, settings = config_from_lerobot(raw, where, loss_reduction)
    weights_path = folder / WEIGHTS
    try:
        tensors = load_file(str(weights_path))
    except Exception as exc:  # safetensors' SafetensorError, a missing file
        _fail(str(weights_path), f"cannot read its tensors: {exc}")
    mapped = project_state_dict(tensors, str(weights_path))
    with no_init_draws():
        policy = LeRobotACTPolicy(config)
    want = {k: tuple(v.shape) for k, v in policy.state_dict().items() if not _is_stat(k)}
    got = {k: tuple(v.shape) for k, v in mapped.items()}
    if want != got:
        missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        wrong = sorted(k for k in set(want) & set(got) if want[k] != got[k])
        _fail(str(weights_path), f"tensors do not match the config: missing {missing[:5]}, "
                                 f"unexpected {extra[:5]}, wrong shape {wrong[:5]}")
    for name, t in mapped.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            _fail(str(weights_path), f"tensor {name!r} holds NaN/inf values")
    policy.load_state_dict({**policy.state_dict(), **mapped})
    _load_stats(policy, folder)
    policy.check_normalization()
    policy.apply_executor_config(settings)
    return policy.eval()


def lerobot_config(policy: LeRobotACTPolicy) -> dict[str, Any]:
    """LeRobot's ``config.json`` object for ``policy`` (training-only fields at LeRobot's
    defaults)."""
    c = policy.config
    settings = policy.executor_config()
    inputs: dict[str, Any] = {STATE_KEY: {"type": "STATE", "shape": [c.state_dim]}}
    if c.env_state_dim:
        inputs[ENV_STATE_KEY] = {"type": "ENV", "shape": [c.env_state_dim]}
    for name in c.camera_names:
        inputs[IMAGES_PREFIX + name] = {"type": "VISUAL", "shape": [
            c.image_channels, c.image_height, c.image_width]}
    return {
        "type": "act", "n_obs_steps": 1, "input_features": inputs,
        "output_features": {ACTION_KEY: {"type": "ACTION", "shape": [c.action_dim]}},
        "device": None, "use_amp": False, "use_peft": False, "push_to_hub": False,
        "repo_id": None, "private": None, "tags": None, "license": None,
        "pretrained_path": None, "chunk_size": c.chunk_size,
        "n_action_steps": settings["n_action_steps"],
        "normalization_mapping": {"VISUAL": "MEAN_STD", "STATE": "MEAN_STD", "ENV": "MEAN_STD",
                                  "ACTION": "MEAN_STD"},
        "vision_backbone": c.vision_backbone, "pretrained_backbone_weights": None,
        "replace_final_stride_with_dilation": False, "pre_norm": c.pre_norm,
        "dim_model": c.dim, "n_heads": c.num_heads, "dim_feedforward": c.dim_feedforward,
        "feedforward_activation": "relu", "n_encoder_layers": c.encoder_layers,
        "n_decoder_layers": c.decoder_layers, "use_vae": c.use_vae, "latent_dim": c.latent_dim,
        "n_vae_encoder_layers": c.vae_encoder_layers,
        "temporal_ensemble_coeff": settings["temporal_ensemble_coeff"], "dropout": c.dropout,
        "kl_weight": c.kl_weight, "optimizer_lr": 1e-05, "optimizer_weight_decay": 0.0001,
        "optimizer_lr_backbone": 1e-05,
    }


def _stats_tensors(policy: LeRobotACTPolicy) -> dict[str, torch.Tensor]:
    c = policy.config
    out = {f"{ACTION_KEY}.mean": policy.action_mean, f"{ACTION_KEY}.std": policy.action_std,
           f"{STATE_KEY}.mean": policy.state_mean, f"{STATE_KEY}.std": policy.state_std}
    if c.env_state_dim:
        out[f"{ENV_STATE_KEY}.mean"] = policy.env_state_mean
        out[f"{ENV_STATE_KEY}.std"] = policy.env_state_std
    for name in c.camera_names:
        out[f"{IMAGES_PREFIX}{name}.mean"] = getattr(policy, f"image_mean_{name}")
        out[f"{IMAGES_PREFIX}{name}.std"] = getattr(policy, f"image_std_{name}")
    return {k: v.detach().cpu().contiguous() for k, v in out.items()}


def _pipelines(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    features = {**config["input_features"], **config["output_features"]}
    norm = {"eps": NORM_EPS, "features": features, "norm_map": config["normalization_mapping"]}
    device = {"registry_name": "device_processor", "config": {"device": "cpu",
                                                              "float_dtype": None}}
    pre = {"name": "policy_preprocessor", "steps": [
        {"registry_name": "rename_observations_processor", "config": {"rename_map": {}}},
        {"registry_name": "to_batch_processor", "config": {}},
        device,
        {"registry_name": "normalizer_processor", "config": norm, "state_file": PRE_STATS}]}
    post_norm = {**norm, "features": dict(config["output_features"])}
    post = {"name": "policy_postprocessor", "steps": [
        {"registry_name": "unnormalizer_processor", "config": post_norm,
         "state_file": POST_STATS}, device]}
    return pre, post


def write_lerobot_act(policy: LeRobotACTPolicy, folder: str | Path) -> None:
    """Write ``policy`` as a LeRobot ACT folder (config.json, model.safetensors, the two
    processor pipelines and their statistics), atomically (the folder is swapped in whole)."""
    if not isinstance(policy, LeRobotACTPolicy):
        raise TypeError(f"policy must be a LeRobotACTPolicy, got {type(policy).__name__}")
    policy.check_normalization()
    config = lerobot_config(policy)
    pre, post = _pipelines(config)
    stats = save(_stats_tensors(policy))
    with safe_write.replacing_folder(folder) as root:
        (root / WEIGHTS).write_bytes(save(lerobot_state_dict(policy), metadata={"format": "pt"}))
        (root / CONFIG).write_text(json.dumps(config, indent=4) + "\n", encoding="utf-8")
        (root / PREPROCESSOR).write_text(json.dumps(pre, indent=2) + "\n", encoding="utf-8")
        (root / POSTPROCESSOR).write_text(json.dumps(post, indent=2) + "\n", encoding="utf-8")
        (root / PRE_STATS).write_bytes(stats)
        (root / POST_STATS).write_bytes(stats)
