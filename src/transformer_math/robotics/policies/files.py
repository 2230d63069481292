"""Reading a policy file without trusting it: header, metadata and tensor shapes checked first.

A policy file is a safetensors file whose metadata holds ``kind`` (a registered policy kind) and
``config`` (the policy's config dataclass as a JSON object). :func:`read_policy_file` checks, in
this order and before any tensor is read or any model is allocated:

1. the safetensors header parses and its offsets cover the file exactly (safetensors' own check:
   a truncated or padded file is refused);
2. ``kind`` is known and ``config`` is a JSON object whose keys are exactly the config's fields
   (required ones present, no unknown ones), each of its JSON type: an ``int`` field a JSON
   integer (not ``true``, not ``64.0``, not ``"64"``), a ``float`` field a finite number, a
   ``bool`` field a JSON boolean, a ``str`` field a string; every integer inside its bound
   (:data:`MAX_POLICY_SIZE`, layer counts at most :data:`MAX_POLICY_LAYERS`; the policy class may
   narrow them in ``config_limits``); the types are checked by the project's one typed-JSON
   reader, :mod:`transformer_math.typed_json`;
3. the policy is built on the meta device (no memory) and its state-dict names, shapes and dtypes
   are compared with the header's: any difference is refused.

Only then does :func:`~transformer_math.robotics.policies.base.load_policy` build the policy for
real and load the tensors (whose sizes now match bytes present in the file). Every refusal is a
``ValueError`` that names the file and what was wrong.

A policy folder (LeRobot layout) is read by :func:`read_policy_folder` just as strictly:
``config.json`` and ``model.safetensors`` are resolved inside the folder (no symbolic link leaving
it, regular files only, ``config.json`` at most :data:`MAX_CONFIG_BYTES`); ``config.json`` is a
JSON object whose ``type`` is a known kind, whose config fields pass check 2, whose
``input_features`` / ``output_features`` / ``normalization_mapping`` equal what that config
implies, and whose executor keys are typed and in range; then check 3 against the weights'
header.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from torch import nn

from transformer_math import typed_json
from transformer_math.checkpoints.files import inside, regular_file
from transformer_math.nn.init import no_init_draws
from transformer_math.robotics.policies.ensembling import ENSEMBLE_ORDERS

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
MAX_CONFIG_BYTES = 2**20
"""Largest ``config.json`` read (a policy's config is a few hundred bytes)."""
FEATURE_KEYS = ("input_features", "output_features", "normalization_mapping")
EXECUTOR_KEYS = ("n_action_steps", "temporal_ensemble_coeff", "temporal_ensemble_order")

MAX_POLICY_SIZE = 2**20
"""Largest integer accepted in a policy file's config (widths, dims, lengths): far above the
policies of this project (widths 64, horizons <= 400), small enough for a meta-device build."""
MAX_POLICY_LAYERS = 64
"""Largest layer count accepted in a policy file's config (``*layers`` fields)."""

_DTYPE_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
                torch.float64: "F64", torch.int64: "I64", torch.int32: "I32", torch.int16: "I16",
                torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}


def _int_limits(policy_cls: type, name: str) -> tuple[int, int]:
    own = getattr(policy_cls, "config_limits", {})
    if name in own:
        return own[name]
    return (1, MAX_POLICY_LAYERS) if name.endswith("layers") else (1, MAX_POLICY_SIZE)


def _check_value(policy_cls: type, name: str, kind: Any, value: Any, where: str) -> Any:
    """``value`` of config field ``name`` (annotation ``kind``) checked against its JSON type by
    the project's one typed-JSON reader (:mod:`transformer_math.typed_json`)."""
    what = f"config key {name!r} in {where}"
    if kind is bool:
        return typed_json.expect_bool(value, what)
    if kind is int:
        lo, hi = _int_limits(policy_cls, name)
        return typed_json.expect_int(value, what, minimum=lo, maximum=hi)
    if kind is float:
        return typed_json.expect_float(value, what)
    if kind is str:
        return typed_json.expect_str(value, what)
    raise TypeError(f"config field {name!r} has an unsupported type {kind!r}")  # library bug


def config_from_metadata(policy_cls: type, text: object, where: str) -> Any:
    """The config dataclass of ``policy_cls`` (its ``config_class``) from the JSON ``text``."""
    if not isinstance(text, str):
        raise ValueError(f"{where}: metadata must hold 'config' (a JSON object), got {text!r}")
    raw = typed_json.loads(text, f"{where}: metadata 'config'", non_finite_tokens=True)
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: metadata 'config' must be a JSON object, got "
                         f"{type(raw).__name__}")
    return config_from_dict(policy_cls, raw, where)


def config_from_dict(policy_cls: type, raw: dict[str, Any], where: str) -> Any:
    """The config dataclass of ``policy_cls`` from the parsed JSON object ``raw`` (check 2)."""
    config_cls = policy_cls.config_class
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    # a field added after files were saved: absent means its value before (not the new default)
    raw = {**getattr(policy_cls, "legacy_defaults", {}), **raw}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise ValueError(f"{where}: unknown config key(s) {unknown}; a {policy_cls.kind!r} "
                         f"policy has {sorted(fields)}")
    missing = [n for n, f in fields.items() if n not in raw and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ValueError(f"{where}: config lacks the required key(s) {missing}")
    hints = typing.get_type_hints(config_cls)
    clean = {n: _check_value(policy_cls, n, hints[n], v, where) for n, v in raw.items()}
    try:
        return config_cls(**clean)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: invalid config: {exc}") from None


def read_header(path: Path, where: str) -> tuple[dict[str, str], dict[str, Any]]:
    """(metadata, name -> (dtype, shape)) of a safetensors file (check 1), nothing allocated."""
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            header = {k: (f.get_slice(k).get_dtype(), tuple(f.get_slice(k).get_shape()))
                      for k in f.keys()}  # noqa: SIM118 (safe_open has no __iter__)
    except Exception as exc:  # safetensors raises its own SafetensorError (and OSError)
        raise ValueError(f"{where} is not a readable safetensors file: {exc}") from None
    return meta, header


def read_policy_file(path: Path, kinds: typing.Mapping[str, type]) -> tuple[type, Any]:
    """(policy class, config) of the file at ``path`` after checks 1-3 of the module docstring."""
    where = f"policy file {str(path)!r}"
    meta, header = read_header(path, where)
    kind = meta.get("kind")
    if not isinstance(kind, str) or kind not in kinds:
        raise ValueError(f"{where}: metadata 'kind' must be one of {sorted(kinds)}, got {kind!r}")
    policy_cls = kinds[kind]
    config = config_from_metadata(policy_cls, meta.get("config"), where)
    check_against_header(policy_cls, config, header, where)
    return policy_cls, config


def _folder_file(folder: Path, name: str) -> Path:
    try:
        return regular_file(inside(folder, name, "policy file"), "policy file")
    except FileNotFoundError as exc:
        raise ValueError(f"policy folder {str(folder)!r}: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"policy folder {str(folder)!r}: {exc}") from None


def _executor_settings(raw: dict[str, Any], config: Any, where: str) -> dict[str, Any]:
    """The executor keys of ``config.json``, typed and in range for the config's chunk size."""
    missing = [k for k in EXECUTOR_KEYS if k not in raw]
    if missing:
        raise ValueError(f"{where}: config lacks the executor key(s) {missing}")
    steps, coeff, order = (raw[k] for k in EXECUTOR_KEYS)
    chunk = config.chunk_size
    steps = typed_json.expect_int(steps, f"'n_action_steps' (at most the chunk size) in {where}",
                                  minimum=1, maximum=chunk)
    if coeff is None:
        if order is not None:
            raise ValueError(f"{where}: 'temporal_ensemble_order' must be null without "
                             f"'temporal_ensemble_coeff', got {order!r}")
    else:
        coeff = typed_json.expect_float(
            coeff, f"'temporal_ensemble_coeff' (null or a number) in {where}", minimum=0.0)
        if steps != 1:
            raise ValueError(f"{where}: 'n_action_steps' must be 1 with a temporal ensemble, "
                             f"got {steps}")
        if order not in ENSEMBLE_ORDERS:
            raise ValueError(f"{where}: 'temporal_ensemble_order' must be one of "
                             f"{list(ENSEMBLE_ORDERS)}, got {order!r}")
    return {"n_action_steps": steps, "temporal_ensemble_coeff": coeff,
            "temporal_ensemble_order": order}


def read_policy_folder(folder: Path, kinds: typing.Mapping[str, type]
                       ) -> tuple[type, Any, dict[str, Any], Path]:
    """(policy class, config, executor settings, weights path) of a LeRobot-style folder after
    the checks of the module docstring; nothing is allocated before they pass."""
    config_path = _folder_file(folder, CONFIG_NAME)
    weights = _folder_file(folder, WEIGHTS_NAME)
    where = f"policy file {str(config_path)!r}"
    size = config_path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise ValueError(f"{where} holds {size} bytes, more than the {MAX_CONFIG_BYTES} a policy "
                         "config may have")
    raw = typed_json.loads(config_path.read_bytes(), where, non_finite_tokens=True)
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must hold a JSON object, got {type(raw).__name__}")
    kind = raw.pop("type", None)
    if not isinstance(kind, str) or kind not in kinds:
        raise ValueError(f"{where}: 'type' must be one of {sorted(kinds)}, got {kind!r}")
    policy_cls = kinds[kind]
    given = {k: raw.pop(k, None) for k in FEATURE_KEYS}
    executor_raw = {k: raw.pop(k) for k in EXECUTOR_KEYS if k in raw}
    config = config_from_dict(policy_cls, raw, where)
    inputs, outputs = policy_cls.features(config)
    expected = {"input_features": inputs, "output_features": outputs,
                "normalization_mapping": policy_cls.normalization(config)}
    for key in FEATURE_KEYS:
        if given[key] != expected[key]:
            raise ValueError(f"{where}: {key!r} must be {json.dumps(expected[key])} for this "
                             f"config, got {json.dumps(given[key])}"[:600])
    if getattr(policy_cls, "has_executor", False):
        settings = _executor_settings(executor_raw, config, where)
    else:
        if executor_raw:
            raise ValueError(f"{where}: a {kind!r} policy has no executor, got "
                             f"{sorted(executor_raw)}")
        settings = {}
    _, header = read_header(weights, f"policy file {str(weights)!r}")
    check_against_header(policy_cls, config, header, f"policy file {str(weights)!r}")
    return policy_cls, config, settings, weights


def check_against_header(policy_cls: type, config: Any,
                         header: dict[str, tuple[str, tuple[int, ...]]], where: str) -> None:
    """Check 3: a meta-device build of ``policy_cls(config)`` has exactly the header's tensors."""
    kind = policy_cls.kind
    try:
        with torch.device("meta"), no_init_draws():
            skeleton = policy_cls(config)
    except Exception as exc:  # a config the policy cannot be built from, whatever the layer says
        raise ValueError(f"{where}: cannot build a {kind!r} policy from its config "
                         f"({type(exc).__name__}: {exc})") from None
    check_tensors_match(skeleton, header, where, config)


def check_tensors_match(model: nn.Module, header: dict[str, tuple[str, tuple[int, ...]]],
                        where: str, config: Any) -> None:
    """The file's tensors (``header``: name -> (dtype, shape)) are exactly ``model``'s state."""
    want = {k: (_DTYPE_NAMES.get(v.dtype, str(v.dtype)), tuple(v.shape))
            for k, v in model.state_dict().items()}
    about = f"for the config in its metadata ({json.dumps(dataclasses.asdict(config))})"
    missing, unexpected = sorted(set(want) - set(header)), sorted(set(header) - set(want))
    if missing or unexpected:
        raise ValueError(f"{where}: tensors do not match the policy {about}: missing "
                         f"{missing[:5]}, unexpected {unexpected[:5]}")
    bad = [f"{k}: {header[k][0]} {header[k][1]} in the file, {want[k][0]} {want[k][1]} expected"
           for k in want if header[k] != want[k]]
    if bad:
        raise ValueError(f"{where}: tensor dtype or shape does not match the policy {about}: "
                         + "; ".join(bad[:5]))
