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
:class:`Fields` reads one object's keys with their types checked: an ``int`` is an ``int`` and
not a ``bool`` (``isinstance(True, int)`` holds in Python, a JSON ``true`` is no count), a
``float`` is a finite number (an integer is accepted and converted), a string is a ``str``, a
list a list, an object a mapping. Every error is a :class:`TypedJSONError` (a ``ValueError``)
whose message names where the value came from (``where``: the file, or a file and a key path)
and the key, e.g. ``config.json: "hidden_size" must be an integer, got true``.

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
    "TypedJSONError",
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


class TypedJSONError(ValueError):
    """A JSON value of the wrong type, or JSON text that is not strict JSON."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""The default of a :class:`Fields` getter that makes the key required."""


def show(value: Any) -> str:
    """``value`` as JSON shows it (``true``, ``null``, ``"text"``), for error messages; long
    values are cut."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(where: str, message: str) -> NoReturn:
    raise TypedJSONError(f"{where}: {message}" if where else message)


def _refuse_constant(token: str) -> NoReturn:
    raise TypedJSONError(f"{token} is not a JSON number (strict JSON has no NaN or infinity)")


def loads(text: str | bytes, where: str = "") -> Any:
    """Parse strict JSON: ``NaN``/``Infinity`` tokens are refused; the error names ``where``."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except TypedJSONError as e:
        _fail(where, str(e))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        _fail(where, f"not valid JSON ({e})")


def expect_int(value: Any, what: str) -> int:
    """``value`` if it is an integer and not a bool; else a :class:`TypedJSONError` naming
    ``what`` (e.g. ``config.json: "hidden_size"``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        _fail("", f"{what} must be an integer, got {show(value)}")
    return value


def expect_bool(value: Any, what: str) -> bool:
    """``value`` if it is ``true`` or ``false``."""
    if not isinstance(value, bool):
        _fail("", f"{what} must be true or false, got {show(value)}")
    return value


def expect_float(value: Any, what: str) -> float:
    """``value`` as a float if it is a finite number (an integer too, never a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        _fail("", f"{what} must be a number, got {show(value)}")
    if not math.isfinite(value):
        _fail("", f"{what} must be a finite number, got {show(value)}")
    return float(value)


def expect_str(value: Any, what: str) -> str:
    """``value`` if it is a string."""
    if not isinstance(value, str):
        _fail("", f"{what} must be a string, got {show(value)}")
    return value


def expect_list(value: Any, what: str) -> list[Any]:
    """``value`` if it is a JSON array."""
    if not isinstance(value, list):
        _fail("", f"{what} must be a list, got {show(value)}")
    return value


def expect_dict(value: Any, what: str) -> dict[str, Any]:
    """``value`` if it is a JSON object (a mapping with string keys)."""
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        _fail("", f"{what} must be an object, got {show(value)}")
    return dict(value)


class Fields:
    """The keys of one JSON object, read with their types checked.

    ``Fields(obj, "config.json")`` then ``fields.get_int("hidden_size")``: the value if present and
    an integer (not a bool), the ``default`` if absent (``MISSING``: the key is required), and
    a :class:`TypedJSONError` naming ``where`` and the key otherwise. ``null`` counts as
    absent only where ``null_is_missing`` is set (Hugging Face configs write ``null`` for
    "not set").
    """

    def __init__(self, obj: Any, where: str, *, null_is_missing: bool = False) -> None:
        if not isinstance(obj, Mapping):
            _fail(where, f"must hold a JSON object, got {show(obj)}")
        self.obj: Mapping[str, Any] = obj
        self.where = where
        self.null_is_missing = null_is_missing

    def what(self, key: str) -> str:
        """How an error names ``key``: ``where: "key"``."""
        return f"{self.where}: {json.dumps(key)}" if self.where else json.dumps(key)

    def has(self, key: str) -> bool:
        return key in self.obj and not (self.null_is_missing and self.obj[key] is None)

    def _get(self, key: str, default: Any, check: Callable[[Any, str], T]) -> T | Any:
        if not self.has(key):
            if default is MISSING:
                _fail(self.where, f"missing key {json.dumps(key)}")
            return default
        return check(self.obj[key], self.what(key))

    def get_int(self, key: str, default: Any = MISSING) -> int:
        return self._get(key, default, expect_int)

    def get_bool(self, key: str, default: Any = MISSING) -> bool:
        return self._get(key, default, expect_bool)

    def get_float(self, key: str, default: Any = MISSING) -> float:
        return self._get(key, default, expect_float)

    def get_str(self, key: str, default: Any = MISSING) -> str:
        return self._get(key, default, expect_str)

    def get_list(self, key: str, default: Any = MISSING) -> list[Any]:
        return self._get(key, default, expect_list)

    def get_dict(self, key: str, default: Any = MISSING) -> dict[str, Any]:
        return self._get(key, default, expect_dict)

    def fields(self, key: str) -> Fields:
        """The object at ``key`` as :class:`Fields` (required), its ``where`` extended."""
        return Fields(self._get(key, MISSING, expect_dict), self.what(key),
                      null_is_missing=self.null_is_missing)
