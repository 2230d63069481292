"""The typed schema of one claim entry of a results document (``tmath verify --json``), checked
field by field before ``report``, ``annotate`` or ``design`` render anything (issue 39.3).

A results file is the project's own output, but it is read back from disk, where it can be cut,
edited or written by another tool: every field a renderer reads with a type in mind is checked
here, and the first wrong one raises ``ValueError`` naming its path (``claims[3].per_seed.mean``)
and what was expected. Fields not listed are free-form (``measured``, ``details``: printed as
JSON). A missing field is allowed (older documents lack the newer fields); a present one must
have its type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from transformer_math import typed_json

Check = Callable[[Any, str], None]


class SchemaError(ValueError):
    """A results entry whose field has the wrong type; the message names the field's path."""


def _fail(path: str, expected: str, value: Any) -> None:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    raise SchemaError(f"{path} must be {expected}, got {shown} ({type(value).__name__})")


def _typed(expect: Callable[[Any, str], Any]) -> Check:
    """A check by the project's one typed-JSON reader (:mod:`transformer_math.typed_json`),
    its ``ValueError`` raised as :class:`SchemaError`."""
    def inner(value: Any, path: str) -> None:
        try:
            expect(value, path)
        except SchemaError:
            raise
        except ValueError as exc:
            raise SchemaError(str(exc)) from None
    return inner


_str = _typed(typed_json.expect_str)


def _opt(check: Check) -> Check:
    def inner(value: Any, path: str) -> None:
        if value is not None:
            check(value, path)
    return inner


_int = _typed(typed_json.expect_int)
_bool = _typed(typed_json.expect_bool)
_list = _typed(typed_json.expect_list)
_mapping = _typed(typed_json.expect_dict)


def _number(value: Any, path: str) -> None:
    """A JSON number (NaN and infinities, which ``json`` reads, included) or null."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        _fail(path, "a number or null", value)


#: how ``report.results.to_jsonable`` writes the non-finite floats strict JSON cannot hold
SPECIAL_FLOATS = ("NaN", "Infinity", "-Infinity")


def _real(value: Any, path: str) -> None:
    """A number, null, or one of :data:`SPECIAL_FLOATS`."""
    if isinstance(value, str):
        if value not in SPECIAL_FLOATS:
            _fail(path, f"a number, null or one of {SPECIAL_FLOATS}", value)
        return
    _number(value, path)


def _list_of(check: Check) -> Check:
    def inner(value: Any, path: str) -> None:
        _list(value, path)
        for i, item in enumerate(value):
            check(item, f"{path}[{i}]")
    return inner


def _map_of(check: Check) -> Check:
    def inner(value: Any, path: str) -> None:
        _mapping(value, path)
        for key, item in value.items():
            check(item, f"{path}.{key}")
    return inner


def _object(fields: Mapping[str, Check]) -> Check:
    def inner(value: Any, path: str) -> None:
        _mapping(value, path)
        for key, check in fields.items():
            if key in value:
                check(value[key], f"{path}.{key}")
    return inner


def _pair(value: Any, path: str) -> None:
    if not isinstance(value, list) or len(value) != 2:
        _fail(path, "a [start, end] pair of line numbers", value)
    for i, line in enumerate(value):
        _int(line, f"{path}[{i}]")


def _scalar(value: Any, path: str) -> None:
    """A number, null or any string (an x value may be a category)."""
    if not isinstance(value, str):
        _number(value, path)


def _any(value: Any, path: str) -> None:
    """Free-form JSON: printed, never read with a type in mind."""


def _hline(value: Any, path: str) -> None:
    """A reference line of a figure: [position, label]."""
    if not isinstance(value, list) or len(value) != 2:
        _fail(path, "a [position, label] pair", value)
    _real(value[0], f"{path}[0]")
    _str(value[1], f"{path}[1]")


def _timing(value: Any, path: str) -> None:
    if isinstance(value, list):
        _list_of(_number)(value, path)
    else:
        _number(value, path)


#: a pass condition; ``predicted``/``measured`` are the quantity itself and ``test`` the
#: inequality in words (issue 38.3), absent from older documents
_MARGIN = _object({"name": _str, "value": _real, "threshold": _real, "sense": _str,
                   "slack": _real, "predicted": _real, "measured": _real, "test": _str})
_SERIES = _object({"label": _opt(_str), "x": _list_of(_scalar), "y": _list_of(_real),
                   "kind": _str, "style": _str})
_FIGURE = _object({"title": _str, "xlabel": _str, "ylabel": _str, "logx": _bool, "logy": _bool,
                   "series": _list_of(_SERIES),
                   "hlines": _list_of(_hline), "vlines": _list_of(_hline)})
_PER_SEED = _object({"seeds": _list_of(_int), "values": _map_of(_list_of(_real)),
                     "mean": _map_of(_real), "spread": _map_of(_real),
                     "min": _map_of(_real), "max": _map_of(_real)})
_REFUTATION = _object({"seed": _str, "line": _int, "to_line": _int, "quote": _str, "says": _str,
                       "reading": _str, "correct": _str, "also": _list_of(_list_of(_any))})
_SEED_REF = _object({"seed": _str, "lines": _pair})
_FALSIFIER = _object({"name": _str, "bug": _str, "description": _str, "caught": _opt(_bool),
                      "verdict": _opt(_str), "error": _opt(_str),
                      "failed_conditions": _list_of(_MARGIN)})

#: field -> check, for every claim entry's field a renderer reads with a type in mind
CLAIM_FIELDS: dict[str, Check] = {
    "id": _str, "topic": _opt(_str), "source": _opt(_str), "statement": _opt(_str),
    "tier": _opt(_str), "expected": _opt(_str), "version": _opt(_int),
    "statement_zh": _opt(_str), "section": _opt(_str),
    "sections": _list_of(_str), "module": _opt(_str), "falsifier_bug": _opt(_str),
    "kind": _opt(_str), "audit": _opt(_str), "verdict": _str, "expected_met": _opt(_bool),
    "predicted": _any, "tolerance": _any, "seconds": _number,
    "timing": _map_of(_timing),
    "notes": _list_of(_str), "figures": _list_of(_FIGURE), "margins": _list_of(_MARGIN),
    "seed_margins": _list_of(_MARGIN), "decisive": _list_of(_MARGIN),
    "per_seed": _opt(_PER_SEED), "reached_bugs": _list_of(_str), "error": _opt(_str),
    "seed_refs": _list_of(_SEED_REF), "refutes": _list_of(_REFUTATION),
    "corrections": _list_of(_map_of(_any)), "falsifier": _opt(_FALSIFIER),
}


def check_claim_entry(entry: Mapping[str, Any], path: str) -> None:
    """Raise :class:`SchemaError` naming the first field of ``entry`` with the wrong type."""
    for key, check in CLAIM_FIELDS.items():
        if key in entry:
            check(entry[key], f"{path}.{key}")
