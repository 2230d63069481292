"""Typed reads of config-file values (``config.json``, ``params.json``): every error names the key.

A config file is input from outside: a value of the wrong JSON type is refused, never coerced.
``bool("false")`` is True, so ``"tie_word_embeddings": "false"`` read with ``bool()`` silently
ties the head; here it raises ``ValueError: tie_word_embeddings in config.json must be a JSON
boolean (true/false), got "false"``.

The rules are those of the project's one typed-JSON reader, :mod:`transformer_math.typed_json`
(these functions are its thin wrappers with the checkpoint defaults):

- :func:`bool_key`: a JSON boolean only (not 0/1, not a string);
- :func:`int_key`: a JSON integer only (not a bool, not a float: ``64.0`` is refused, since no
  tool that writes checkpoints writes sizes as floats), in ``[minimum, maximum]`` (maximum
  ``nn.config.MAX_SIZE`` by default);
- :func:`float_key`: a JSON number (int or float, not a bool) that is finite, ``>= minimum``
  (``> minimum`` with ``strict``);
- :func:`str_key`: a string; :func:`mapping_key`: an object (or null: empty).

A key that is absent takes ``default`` (returned as it is; a number default as a float for
:func:`float_key`); without a default it is required. A present ``null`` is treated as absent
(HF writes optional keys as null).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformer_math.nn.config import MAX_SIZE
from transformer_math.typed_json import MISSING, Fields

REQUIRED: Any = MISSING
"""The default that makes a key required (``typed_json.MISSING``)."""


def _fields(cfg: Mapping[str, Any], source: str) -> Fields:
    return Fields(cfg, source, null_is_missing=True)


def bool_key(cfg: Mapping[str, Any], key: str, default: Any = REQUIRED, *,
             source: str = "config.json") -> bool:
    """``cfg[key]`` as a JSON boolean."""
    return _fields(cfg, source).get_bool(key, default)


def int_key(cfg: Mapping[str, Any], key: str, default: Any = REQUIRED, *,
            source: str = "config.json", minimum: int = 1, maximum: int = MAX_SIZE) -> int:
    """``cfg[key]`` as a JSON integer in ``[minimum, maximum]`` (``default`` returned as is)."""
    return _fields(cfg, source).get_int(key, default, minimum=minimum, maximum=maximum)


def float_key(cfg: Mapping[str, Any], key: str, default: Any = REQUIRED, *,
              source: str = "config.json", minimum: float = 0.0, strict: bool = False) -> float:
    """``cfg[key]`` as a finite number ``>= minimum`` (``> minimum`` when ``strict``)."""
    value = _fields(cfg, source).get_float(key, default, minimum=minimum, strict=strict)
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # an absent key's number default, as a float
    return value


def str_key(cfg: Mapping[str, Any], key: str, default: Any = REQUIRED, *,
            source: str = "config.json") -> str:
    """``cfg[key]`` as a string."""
    return _fields(cfg, source).get_str(key, default)


def mapping_key(cfg: Mapping[str, Any], key: str, *, source: str = "config.json"
                ) -> dict[str, Any]:
    """``cfg[key]`` as a JSON object (absent or null: ``{}``)."""
    return _fields(cfg, source).get_dict(key, {})


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
