"""A safe, exact JSON codec for what a task sends back: numbers, containers, the project's own
dataclasses and enums, tensors and arrays.

A task's result (a seed's numbers and its figure data, or a whole claim's evidence) crosses a
process boundary and lands in the results log that ``--resume`` reads back. Pickle would carry
anything, and run anything when read; this codec carries only data and reads back only data:

- ``None``, ``bool``, ``int``, ``str`` as themselves; a ``Fraction`` as
  ``{"$fraction": [n, d]}``; a ``float`` as itself, or
  ``{"$float": "nan" | "inf" | "-inf"}`` (the log stays strict JSON). Python writes a float
  as the shortest text that reads back to the same double, so numbers round-trip exactly;
- a :class:`~transformer_math.i18n.message.Message` (a note made from a catalog id) as
  ``{"$message": msgid, "args": {"$dict": ...}}``, so it can still be translated where it lands;
- ``list`` as a list; ``tuple`` ``{"$tuple": [...]}``; ``dict`` ``{"$dict": [[key, value],
  ...]}`` (any encodable key, order kept); ``set``/``frozenset`` ``{"$set": [...]}``;
- a dataclass or enum defined in ``transformer_math`` as ``{"$dataclass": "module:Name",
  "fields": {...}}`` or ``{"$enum": "module:Name", "value": ...}``. Decoding imports only
  modules under ``transformer_math.`` and accepts only a dataclass (or enum) found there; a
  dataclass is rebuilt field by field without running its ``__init__`` (it was valid when it
  was encoded); a field missing from the document takes its default when it has one (a field
  added since the log was written, so that ``--resume`` still reads an older log), and an
  unknown field or a missing one without a default is refused;
- a ``torch.Tensor`` as ``{"$tensor": dtype, "shape": [...], "data": [...]}`` (CPU, detached;
  float16/bfloat16/float32 values are exact as doubles); a ``numpy`` array ``{"$ndarray": ...}``
  and a numpy scalar ``{"$npscalar": dtype, "value": v}``.

Anything else raises :class:`CodecError` naming the type and where in the value it sits.
"""

from __future__ import annotations

import dataclasses
import enum
import fractions
import importlib
import math
from typing import Any

from transformer_math.i18n.message import Message

PACKAGE = "transformer_math"

#: dtypes a tensor or array may have in the log (no object arrays, no complex numbers)
TENSOR_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16",
                 "int8", "uint8", "bool")
MAX_DEPTH = 64


class CodecError(ValueError):
    """A value that this codec does not carry, or a document that is not one of its values."""


def encode(value: Any) -> Any:
    """``value`` as JSON-able data (see the module docstring)."""
    return _encode(value, "value", 0)


def decode(data: Any) -> Any:
    """The value :func:`encode` turned into ``data``."""
    return _decode(data, "value", 0)


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _encode(v: Any, where: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise CodecError(f"{where}: nested deeper than {MAX_DEPTH}")
    if isinstance(v, enum.Enum):  # before str and int: a StrEnum is a str
        return {"$enum": _own(type(v), where), "value": _encode(v.value, where, depth + 1)}
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, Message):  # before str: a note's catalog id and arguments travel with it
        return {"$message": v.msgid, "args": _encode(v.args, f"{where}.args", depth + 1)}
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, fractions.Fraction):
        return {"$fraction": [v.numerator, v.denominator]}
    if isinstance(v, float):
        if math.isfinite(v):
            return float(v)
        return {"$float": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
    if isinstance(v, list):
        return [_encode(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return {"$tuple": [_encode(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]}
    if isinstance(v, (set, frozenset)):
        items = sorted(v, key=repr)
        return {"$set": [_encode(x, f"{where}{{}}", depth + 1) for x in items],
                "frozen": isinstance(v, frozenset)}
    if isinstance(v, dict):
        return {"$dict": [[_encode(k, f"{where} key", depth + 1),
                           _encode(x, f"{where}[{k!r}]", depth + 1)] for k, x in v.items()]}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        name = _own(type(v), where)
        return {"$dataclass": name,
                "fields": {f.name: _encode(getattr(v, f.name), f"{where}.{f.name}", depth + 1)
                           for f in dataclasses.fields(v)}}
    tensor = _tensor(v, where)
    if tensor is not None:
        return tensor
    raise CodecError(f"{where}: cannot carry a {type(v).__module__}.{type(v).__qualname__} "
                     "between processes (data only: numbers, containers, transformer_math "
                     "dataclasses, tensors)")


def _own(cls: type, where: str) -> str:
    if not (cls.__module__ == PACKAGE or cls.__module__.startswith(PACKAGE + ".")):
        raise CodecError(f"{where}: {_name(cls)} is not a transformer_math type")
    if "<locals>" in cls.__qualname__:
        raise CodecError(f"{where}: {_name(cls)} is defined inside a function")
    return _name(cls)


def _tensor(v: Any, where: str) -> dict[str, Any] | None:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        torch = None
    if torch is not None and isinstance(v, torch.Tensor):
        dtype = str(v.dtype).removeprefix("torch.")
        if dtype not in TENSOR_DTYPES:
            raise CodecError(f"{where}: tensors of dtype {dtype} are not carried")
        t = v.detach().to("cpu")
        data = t.to(torch.float64) if dtype in ("float16", "bfloat16") else t
        return {"$tensor": dtype, "shape": list(t.shape),
                "data": [_encode(x, where, 1) for x in data.reshape(-1).tolist()]}
    import numpy as np

    if isinstance(v, np.ndarray):
        if str(v.dtype) not in TENSOR_DTYPES or v.dtype == object:
            raise CodecError(f"{where}: arrays of dtype {v.dtype} are not carried")
        return {"$ndarray": str(v.dtype), "shape": list(v.shape),
                "data": [_encode(x, where, 1) for x in v.reshape(-1).tolist()]}
    if isinstance(v, np.generic) and str(v.dtype) in TENSOR_DTYPES:
        return {"$npscalar": str(v.dtype), "value": _encode(v.item(), where, 1)}
    return None


def _lookup(name: Any, where: str) -> type:
    if not isinstance(name, str) or ":" not in name:
        raise CodecError(f"{where}: type name must be 'module:Name', got {name!r}")
    module, qualname = name.split(":", 1)
    if not (module == PACKAGE or module.startswith(PACKAGE + ".")) or not all(
            part.isidentifier() for part in module.split(".") + qualname.split(".")):
        raise CodecError(f"{where}: {name!r} is not a transformer_math type")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError:
        raise CodecError(f"{where}: no module {module!r}") from None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if not isinstance(obj, type):
        raise CodecError(f"{where}: {name!r} is not a class")
    return obj


def _decode(d: Any, where: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise CodecError(f"{where}: nested deeper than {MAX_DEPTH}")
    if d is None or isinstance(d, (bool, int, float, str)):
        if isinstance(d, float) and not math.isfinite(d):
            raise CodecError(f"{where}: a bare non-finite float")
        return d
    if isinstance(d, list):
        return [_decode(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(d)]
    if not isinstance(d, dict) or len(d) == 0:
        raise CodecError(f"{where}: expected a codec value, got {type(d).__name__}")
    tag = next(iter(d))
    if tag == "$float" and d.get("$float") in ("nan", "inf", "-inf") and len(d) == 1:
        return float(d["$float"])
    if tag == "$fraction":
        nd = d.get("$fraction")
        if not (isinstance(nd, list) and len(nd) == 2 and all(
                isinstance(n, int) and not isinstance(n, bool) for n in nd) and nd[1] > 0):
            raise CodecError(f"{where}: a $fraction is [numerator, positive denominator]")
        return fractions.Fraction(nd[0], nd[1])
    if tag == "$tuple" and isinstance(d.get("$tuple"), list) and len(d) == 1:
        return tuple(_decode(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(d["$tuple"]))
    if tag == "$set" and isinstance(d.get("$set"), list):
        items = [_decode(x, where, depth + 1) for x in d["$set"]]
        return frozenset(items) if d.get("frozen") else set(items)
    if tag == "$dict" and isinstance(d.get("$dict"), list) and len(d) == 1:
        out: dict[Any, Any] = {}
        for item in d["$dict"]:
            if not (isinstance(item, list) and len(item) == 2):
                raise CodecError(f"{where}: a $dict item must be [key, value]")
            out[_decode(item[0], f"{where} key", depth + 1)] = _decode(item[1], where, depth + 1)
        return out
    if tag == "$enum":
        cls = _lookup(d["$enum"], where)
        if not issubclass(cls, enum.Enum):
            raise CodecError(f"{where}: {d['$enum']!r} is not an enum")
        try:
            return cls(_decode(d.get("value"), where, depth + 1))
        except ValueError:
            raise CodecError(f"{where}: {d.get('value')!r} is not a {d['$enum']}") from None
    if tag == "$dataclass":
        cls = _lookup(d["$dataclass"], where)
        fields = d.get("fields")
        if not dataclasses.is_dataclass(cls) or not isinstance(fields, dict):
            raise CodecError(f"{where}: {d['$dataclass']!r} is not a dataclass with fields")
        names = {f.name for f in dataclasses.fields(cls)}
        defaults = _defaults(cls)
        if not set(fields) <= names or not names - set(fields) <= set(defaults):
            raise CodecError(f"{where}: fields {sorted(fields)} are not those of "
                             f"{d['$dataclass']} {sorted(names)}")
        obj = object.__new__(cls)
        for k, x in fields.items():
            object.__setattr__(obj, k, _decode(x, f"{where}.{k}", depth + 1))
        for k in names - set(fields):  # a field added since the log was written
            object.__setattr__(obj, k, defaults[k]())
        return obj
    if tag == "$message" and isinstance(d.get("$message"), str):
        args = _decode(d.get("args"), f"{where}.args", depth + 1)
        if not (isinstance(args, dict) and all(isinstance(k, str) for k in args)):
            raise CodecError(f"{where}: a $message's args are a dict by name")
        try:
            return Message(d["$message"], **args)
        except (TypeError, ValueError) as exc:
            raise CodecError(f"{where}: {exc}") from None
    if tag in ("$tensor", "$ndarray"):
        return _decode_array(d, tag, where)
    if tag == "$npscalar" and d.get("$npscalar") in TENSOR_DTYPES:
        import numpy as np

        if d["$npscalar"] == "bfloat16":
            raise CodecError(f"{where}: numpy has no bfloat16")
        return np.dtype(d["$npscalar"]).type(_decode(d.get("value"), where, depth + 1))
    raise CodecError(f"{where}: unknown codec tag {tag!r}")


def _defaults(cls: type) -> dict[str, Any]:
    """Field name -> a function giving its default, for the fields of ``cls`` that have one."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = lambda value=f.default: value
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory
    return out


def _decode_array(d: dict[str, Any], tag: str, where: str) -> Any:
    dtype, shape, data = d.get(tag), d.get("shape"), d.get("data")
    if dtype not in TENSOR_DTYPES:
        raise CodecError(f"{where}: dtype must be one of {TENSOR_DTYPES}, got {dtype!r}")
    if not (isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool)
                                            and n >= 0 for n in shape)):
        raise CodecError(f"{where}: shape must be a list of non-negative ints")
    if not isinstance(data, list) or len(data) != math.prod(shape):
        raise CodecError(f"{where}: data must hold prod(shape) = {math.prod(shape)} numbers")
    values = [_decode(x, where, 1) for x in data]
    if not all(isinstance(x, (int, float)) for x in values):
        raise CodecError(f"{where}: array data must be numbers")
    if tag == "$tensor":
        import torch

        wide = torch.float64 if dtype in ("float16", "bfloat16") else getattr(torch, dtype)
        return torch.tensor(values, dtype=wide).reshape(shape).to(getattr(torch, dtype))
    import numpy as np

    if dtype == "bfloat16":
        raise CodecError(f"{where}: numpy has no bfloat16")
    return np.array(values, dtype=dtype).reshape(shape)
