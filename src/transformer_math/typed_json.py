"""Strict JSON for every file the project writes or reads: one writer and one typed reader.

Writing. JSON has no NaN or infinity, yet a measurement may be one (a falsifier that overflows is
the point of ``attention.stable-softmax``). :func:`to_jsonable` writes non-finite floats as the
strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` and :func:`dumps` serialises with
``allow_nan=False`` (RFC 8259 section 6: such numbers are not permitted), so any JSON reader
can open the file. Tensors, arrays and numpy scalars become lists and numbers; enums their
values; paths strings; anything else unknown its ``str``. :func:`write_json` writes atomically
(:mod:`transformer_math.safe_write`).

Reading. :func:`loads` parses with Python's ``json`` but refuses the bare tokens ``NaN``,
``Infinity`` and ``-Infinity`` that ``json.loads`` accepts by default (``parse_constant``), and
:class:`Fields` reads one object's keys with their types checked (the ``expect_*`` functions
check one value): an integer is a JSON integer and not a bool (``isinstance(True, int)`` holds
in Python; a JSON ``true`` is no count) nor ``64.0``, optionally inside ``[minimum, maximum]``;
a boolean is ``true``/``false`` (``bool("false")`` is True, so a coercing reader would turn
``"false"`` into True); a number is finite (an integer is accepted and converted); a string, an
array and an object are just that. Nothing is coerced. Every error is a ``ValueError`` (the
project's one type for bad input) naming the key and where it came from, e.g. ``hidden_size in
config.json must be a JSON integer in [1, 1048576], got true``.

Used by checkpoint configs (``checkpoints.adapters.keys``), policy folders
(``robotics.policies.files``), the doctor and the report's results reader (issue 37, item 4).
It sits in the lowest layer (ARCHITECTURE.md) and imports only ``safe_write`` of the project.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn, TypeVar

__all__ = [
    "MISSING",
    "Fields",
    "dumps",
    "expect_bool",
    "expect_dict",
    "expect_float",
    "expect_int",
    "expect_list",
    "expect_str",
    "loads",
    "show",
    "to_jsonable",
    "write_json",
]

T = TypeVar("T")


# --- writing ---------------------------------------------------------------------------------


def to_jsonable(value: Any) -> Any:
    """A copy of ``value`` made only of dict, list, str, finite float, int, bool and None."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, Enum):
        return to_jsonable(value.value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [to_jsonable(v) for v in items]
    tolist = getattr(value, "tolist", None)  # torch.Tensor, numpy arrays and scalars
    if callable(tolist):
        try:
            return to_jsonable(tolist())
        except (TypeError, ValueError, RuntimeError):
            pass
    to_json = getattr(value, "to_json", None)  # Figure and friends
    if callable(to_json):
        return to_jsonable(to_json())
    return str(value)


def dumps(document: Any) -> str:
    """Strict JSON text (no NaN), indented, with a trailing newline."""
    return json.dumps(to_jsonable(document), indent=2, allow_nan=False) + "\n"


def write_json(document: Any, path: Path) -> Path:
    """Write ``document`` as strict JSON to ``path`` atomically (parent folders are created; a
    link at ``path`` is replaced, never followed: :mod:`transformer_math.safe_write`)."""
    from transformer_math import safe_write

    return safe_write.write_text(path, dumps(document))


# --- reading ---------------------------------------------------------------------------------


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""The default of a :class:`Fields` getter that makes the key required."""


def show(value: Any) -> str:
    """``value`` as JSON shows it (``true``, ``null``, ``"text"``), for error messages; long
    values are cut to 60 characters."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _NonFiniteTokenError(ValueError):
    pass


def _fail(message: str) -> NoReturn:
    raise ValueError(message)


def _refuse_constant(token: str) -> NoReturn:
    raise _NonFiniteTokenError(f"{token} is not a JSON number (strict JSON has no NaN or infinity)")


def loads(text: str | bytes, where: str, *, non_finite_tokens: bool = False) -> Any:
    """Parse strict JSON (bytes must be UTF-8); errors name ``where``.

    The tokens ``NaN``, ``Infinity`` and ``-Infinity`` are refused, unless
    ``non_finite_tokens``: then they become floats, for a caller that checks every value with
    the getters below (which refuse non-finite numbers naming the key, a clearer message)."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        if non_finite_tokens:
            return json.loads(text)
        return json.loads(text, parse_constant=_refuse_constant)
    except _NonFiniteTokenError as e:
        _fail(f"{where}: {e}")
    except RecursionError:
        _fail(f"{where} is not valid JSON (nested too deeply)")
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        _fail(f"{where} is not valid JSON ({e})")


def expect_int(value: Any, what: str, *, minimum: int | None = None,
               maximum: int | None = None) -> int:
    """``value`` if it is a JSON integer (not a bool, not ``64.0``) in ``[minimum, maximum]``;
    else a ``ValueError`` naming ``what`` (e.g. ``hidden_size in config.json``)."""
    ok = not isinstance(value, bool) and isinstance(value, int)
    if ok and minimum is not None and value < minimum:
        ok = False
    if ok and maximum is not None and value > maximum:
        ok = False
    if not ok:
        if minimum is None and maximum is None:
            span = ""
        else:
            lo = "-inf" if minimum is None else minimum
            hi = "inf" if maximum is None else maximum
            span = f" in [{lo}, {hi}]"
        _fail(f"{what} must be a JSON integer{span}, got {show(value)}")
    return value


def expect_bool(value: Any, what: str) -> bool:
    """``value`` if it is a JSON boolean (not 0/1, not the string ``"false"``)."""
    if not isinstance(value, bool):
        _fail(f"{what} must be a JSON boolean (true/false), got {show(value)}")
    return value


def expect_float(value: Any, what: str, *, minimum: float = -math.inf,
                 strict: bool = False) -> float:
    """``value`` as a float if it is a finite JSON number (an integer too, never a bool)
    ``>= minimum`` (``> minimum`` when ``strict``)."""
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or value < minimum or (strict and value == minimum)):
        rel = "" if minimum == -math.inf else f" {'>' if strict else '>='} {minimum}"
        _fail(f"{what} must be a finite number{rel}, got {show(value)}")
    return float(value)


def expect_str(value: Any, what: str) -> str:
    """``value`` if it is a JSON string."""
    if not isinstance(value, str):
        _fail(f"{what} must be a string, got {show(value)}")
    return value


def expect_list(value: Any, what: str) -> list[Any]:
    """``value`` if it is a JSON array."""
    if not isinstance(value, list):
        _fail(f"{what} must be a JSON array, got {show(value)}")
    return value


def expect_dict(value: Any, what: str) -> dict[str, Any]:
    """``value`` as a dict if it is a JSON object (a mapping with string keys)."""
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        _fail(f"{what} must be a JSON object, got {show(value)}")
    return dict(value)


class Fields:
    """The keys of one JSON object, read with their types checked.

    ``Fields(cfg, "config.json").get_int("hidden_size", minimum=1)``: the value if present and
    of its type (the ``expect_*`` rules above), the ``default`` returned as it is if the key is
    absent (``MISSING``: required, ``config.json lacks the required key 'hidden_size'``), a
    ``ValueError`` naming the key and ``where`` otherwise (``hidden_size in
    config.json must be ...``). A present ``null`` counts as absent where ``null_is_missing``
    is set (Hugging Face configs write optional keys as ``null``); else it is a wrong type.
    """

    def __init__(self, obj: Any, where: str, *, null_is_missing: bool = False) -> None:
        if not isinstance(obj, Mapping):
            _fail(f"{where} must hold a JSON object, got {show(obj)}")
        self.obj: Mapping[str, Any] = obj
        self.where = where
        self.null_is_missing = null_is_missing

    def what(self, key: str) -> str:
        """How an error names ``key``: ``key in where``."""
        return f"{key} in {self.where}"

    def has(self, key: str) -> bool:
        return key in self.obj and not (self.null_is_missing and self.obj[key] is None)

    def _get(self, key: str, default: Any, check: Callable[..., T], **limits: Any) -> T | Any:
        if not self.has(key):
            if default is MISSING:
                _fail(f"{self.where} lacks the required key {key!r}")
            return default
        return check(self.obj[key], self.what(key), **limits)

    def get_int(self, key: str, default: Any = MISSING, *, minimum: int | None = None,
                maximum: int | None = None) -> int:
        return self._get(key, default, expect_int, minimum=minimum, maximum=maximum)

    def get_bool(self, key: str, default: Any = MISSING) -> bool:
        return self._get(key, default, expect_bool)

    def get_float(self, key: str, default: Any = MISSING, *, minimum: float = -math.inf,
                  strict: bool = False) -> float:
        return self._get(key, default, expect_float, minimum=minimum, strict=strict)

    def get_str(self, key: str, default: Any = MISSING) -> str:
        return self._get(key, default, expect_str)

    def get_list(self, key: str, default: Any = MISSING) -> list[Any]:
        return self._get(key, default, expect_list)

    def get_dict(self, key: str, default: Any = MISSING) -> dict[str, Any]:
        return self._get(key, default, expect_dict)
