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
   narrow them in ``config_limits``);
3. the policy is built on the meta device (no memory) and its state-dict names, shapes and dtypes
   are compared with the header's: any difference is refused.

Only then does :func:`~transformer_math.robotics.policies.base.load_policy` build the policy for
real and load the tensors (whose sizes now match bytes present in the file). Every refusal is a
``ValueError`` that names the file and what was wrong.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from torch import nn

from transformer_math.nn.init import no_init_draws

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
    """``value`` of config field ``name`` (annotation ``kind``) checked against its JSON type."""
    if kind is bool:
        if type(value) is not bool:
            raise ValueError(f"{where}: config key {name!r} must be a JSON boolean, got {value!r}")
        return value
    if kind is int:
        if type(value) is not int:
            raise ValueError(f"{where}: config key {name!r} must be a JSON integer, got {value!r}")
        lo, hi = _int_limits(policy_cls, name)
        if not lo <= value <= hi:
            raise ValueError(f"{where}: config key {name!r} must be in [{lo}, {hi}], got {value}")
        return value
    if kind is float:
        if type(value) not in (int, float) or not math.isfinite(value):
            raise ValueError(f"{where}: config key {name!r} must be a finite JSON number, "
                             f"got {value!r}")
        return float(value)
    if kind is str:
        if type(value) is not str:
            raise ValueError(f"{where}: config key {name!r} must be a JSON string, got {value!r}")
        return value
    raise TypeError(f"config field {name!r} has an unsupported type {kind!r}")  # library bug


def config_from_metadata(policy_cls: type, text: object, where: str) -> Any:
    """The config dataclass of ``policy_cls`` (its ``config_class``) from the JSON ``text``."""
    if not isinstance(text, str):
        raise ValueError(f"{where}: metadata must hold 'config' (a JSON object), got {text!r}")
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{where}: metadata 'config' is not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: metadata 'config' must be a JSON object, got "
                         f"{type(raw).__name__}")
    config_cls = policy_cls.config_class
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
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


def read_policy_file(path: Path, kinds: typing.Mapping[str, type]) -> tuple[type, Any]:
    """(policy class, config) of the file at ``path`` after checks 1-3 of the module docstring."""
    where = f"policy file {str(path)!r}"
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            header = {k: (f.get_slice(k).get_dtype(), tuple(f.get_slice(k).get_shape()))
                      for k in f.keys()}  # noqa: SIM118 (safe_open has no __iter__)
    except Exception as exc:  # safetensors raises its own SafetensorError (and OSError)
        raise ValueError(f"{where} is not a readable safetensors file: {exc}") from None
    kind = meta.get("kind")
    if not isinstance(kind, str) or kind not in kinds:
        raise ValueError(f"{where}: metadata 'kind' must be one of {sorted(kinds)}, got {kind!r}")
    policy_cls = kinds[kind]
    config = config_from_metadata(policy_cls, meta.get("config"), where)
    try:
        with torch.device("meta"), no_init_draws():
            skeleton = policy_cls(config)
    except Exception as exc:  # a config the policy cannot be built from, whatever the layer says
        raise ValueError(f"{where}: cannot build a {kind!r} policy from its config "
                         f"({type(exc).__name__}: {exc})") from None
    check_tensors_match(skeleton, header, where, config)
    return policy_cls, config


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
