"""Typed reads of config-file values (``config.json``, ``params.json``): every error names the key.

A config file is input from outside: a value of the wrong JSON type is refused, never coerced.
``bool("false")`` is True, so ``"tie_word_embeddings": "false"`` read with ``bool()`` silently
ties the head; here it raises ``ValueError: tie_word_embeddings in config.json must be a JSON
boolean (true/false), got 'false'``.

The rules (explicit, one place):

- :func:`bool_key`: a JSON boolean only (not 0/1, not a string);
- :func:`int_key`: a JSON integer only (not a bool, not a float: ``64.0`` is refused, since no
  tool that writes checkpoints writes sizes as floats), in ``[minimum, maximum]`` (maximum
  ``nn.config.MAX_SIZE`` by default);
- :func:`float_key`: a JSON number (int or float, not a bool) that is finite, ``>= minimum``
  (``> minimum`` with ``strict``);
- :func:`str_key`: a string; :func:`mapping_key`: an object (or null: empty).

A key that is absent takes ``default``; without a default it is required. A present ``null``
is treated as absent (HF writes optional keys as null).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from transformer_math.nn.config import MAX_SIZE

REQUIRED: Any = object()


def _get(cfg: Mapping[str, Any], key: str, default: Any, source: str) -> Any:
    value = cfg.get(key)
    if value is None:
        if default is REQUIRED:
            raise ValueError(f"{source} lacks the required key {key!r}")
        return default
    return value


def bool_key(cfg: Mapping[str, Any], key: str, default: Any = REQUIRED, *,
             source: str = "config.json") -> bool:
    """``cfg[key]`` as a JSON boolean."""
    value = _get(cfg, key, default, source)
    if not isinstance(value, bool):
        raise ValueError(f"{key} in {source} must be a JSON boolean (true/false), got {value!r}")
    return value


def int_key(cfg: Mapping[str, Any], key: str, default: Any = REQUIRED, *,
            source: str = "config.json", minimum: int = 1, maximum: int = MAX_SIZE) -> int:
    """``cfg[key]`` as a JSON integer in ``[minimum, maximum]`` (``default`` returned as is)."""
    value = _get(cfg, key, default, source)
    if value is default and default is not REQUIRED:
        return value  # type: ignore[no-any-return]
    if isinstance(value, bool) or not isinstance(value, int) or not (
            minimum <= value <= maximum):
        raise ValueError(f"{key} in {source} must be a JSON integer in [{minimum}, {maximum}], "
                         f"got {value!r}")
    return value


def float_key(cfg: Mapping[str, Any], key: str, default: Any = REQUIRED, *,
              source: str = "config.json", minimum: float = 0.0, strict: bool = False) -> float:
    """``cfg[key]`` as a finite number ``>= minimum`` (``> minimum`` when ``strict``)."""
    value = _get(cfg, key, default, source)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value) or value < minimum or (strict and value == minimum):
        rel = "" if minimum == -math.inf else f" {'>' if strict else '>='} {minimum}"
        raise ValueError(f"{key} in {source} must be a finite number{rel}, got {value!r}"[:300])
    return float(value)


def str_key(cfg: Mapping[str, Any], key: str, default: Any = REQUIRED, *,
            source: str = "config.json") -> str:
    """``cfg[key]`` as a string."""
    value = _get(cfg, key, default, source)
    if not isinstance(value, str):
        raise ValueError(f"{key} in {source} must be a string, got {value!r}")
    return value


def mapping_key(cfg: Mapping[str, Any], key: str, *, source: str = "config.json"
                ) -> dict[str, Any]:
    """``cfg[key]`` as a JSON object (absent or null: ``{}``)."""
    value = cfg.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{key} in {source} must be a JSON object, got {value!r}"[:300])
    return dict(value)


def token_ids(cfg: Mapping[str, Any], key: str, *, source: str = "config.json",
              many: bool = False) -> int | tuple[int, ...] | None:
    """A token id (``many``: or a list of ids) or None; ids are JSON integers >= 0."""
    value = cfg.get(key)
    if value is None:
        return None
    if many and isinstance(value, list):
        return tuple(int_key({key: v}, key, source=source, minimum=0, maximum=2**31)
                     for v in value)
    return int_key(cfg, key, source=source, minimum=0, maximum=2**31)
