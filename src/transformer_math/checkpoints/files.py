"""Files of a checkpoint folder, trusting nothing: confined paths and checked safetensors headers.

Paths (:func:`inside`): a checkpoint names its files (the shards of
``model.safetensors.index.json``, ``config.json``, ...). Each name must be a plain file name
(no ``/``, no ``\\``, not ``.`` or ``..``, no NUL, not absolute), and it is resolved component by
component inside the folder: a symbolic link is followed only while its target stays inside the
folder (at most :data:`MAX_LINKS` links). The check is lexical before anything is touched, and
every ``lstat`` is of a path whose every parent was already found to be a real directory inside
the folder, so nothing outside the folder is opened or even stat'ed, and the error (a
``ValueError`` naming the entry) is the same whether an outside file exists or not.

Headers (:func:`read_header`): the safetensors format is ``u64 n`` (little endian), ``n`` bytes
of JSON ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``,
then the data. Before safetensors itself reads a file, the header length is checked against the
file size (and :data:`MAX_HEADER_BYTES`), every dtype against :data:`DTYPE_BYTES`, every shape
(non-negative ints) against its byte range, and the byte ranges against each other (they tile
the data exactly, in order) and against the file: a forged header is a ``ValueError`` naming the
file and the tensor, never a traceback from inside safetensors and never an allocation.
"""

from __future__ import annotations

import json
import math
import os
import stat
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

MAX_LINKS = 16
MAX_JSON_BYTES = 64 << 20  # config.json, params.json, model.safetensors.index.json
MAX_HEADER_BYTES = 100 * 1000 * 1000  # safetensors' own limit
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1,
               "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1,
               "BOOL": 1}
FLOATING = frozenset({"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"})
TORCH_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
                "BF16": torch.bfloat16, "F8_E4M3": torch.float8_e4m3fn,
                "F8_E5M2": torch.float8_e5m2, "I64": torch.int64, "I32": torch.int32,
                "I16": torch.int16, "I8": torch.int8, "U64": torch.uint64, "U32": torch.uint32,
                "U16": torch.uint16, "U8": torch.uint8, "BOOL": torch.bool}
"""The torch dtype of each safetensors dtype (the format's names, ``safetensors/src/tensor.rs``)."""


def check_name(name: Any, what: str) -> str:
    """``name`` as a plain file name (a str without separators, NUL, ``.`` or ``..``)."""
    if not isinstance(name, str):
        raise ValueError(f"{what} must be a file name string, got {name!r}"[:300])
    if (not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name
            or os.path.isabs(name)):
        raise ValueError(f"{what} {name!r} must be a plain file name inside the checkpoint "
                         "folder (no '/', '..' or absolute path)"[:400])
    return name


def _is_inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def inside(root: str | Path, name: str, what: str) -> Path:
    """The path of the plain file name ``name`` in the folder ``root``, symbolic links followed
    only while they stay inside it (the module docstring). The result may not exist."""
    check_name(name, what)
    base = os.path.realpath(root)
    parts = [name]
    current = base
    links = 0
    while parts:
        part = parts.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            if not _is_inside(base, current):
                raise ValueError(f"{what} {name!r} resolves outside the checkpoint folder")
            continue
        candidate = os.path.join(current, part)
        if not os.path.islink(candidate):
            if parts and not os.path.isdir(candidate):
                return Path(os.path.join(candidate, *parts))  # does not exist: caller reports
            current = candidate
            continue
        links += 1
        if links > MAX_LINKS:
            raise ValueError(f"{what} {name!r}: too many levels of symbolic links")
        target = os.readlink(candidate)
        if os.path.isabs(target):
            target = os.path.normpath(target)
            if not _is_inside(base, target):
                raise ValueError(f"{what} {name!r} is a symbolic link pointing outside the "
                                 "checkpoint folder")
            current = base
            target = os.path.relpath(target, base)
        parts = target.split(os.sep) + parts
    return Path(current)


def regular_file(path: Path, what: str) -> Path:
    """``path`` (from :func:`inside`) if it is a regular file; FileNotFoundError if absent,
    ValueError if it is something else (a directory, a device, a socket)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"{what} {path.name!r} not found in the checkpoint folder"
                                ) from None
    if not stat.S_ISREG(mode):
        raise ValueError(f"{what} {path.name!r} is not a regular file")
    return path


def optional_file(root: str | Path, name: str, what: str) -> Path | None:
    """The regular file ``name`` inside ``root``, or None when it does not exist."""
    path = inside(root, name, what)
    if not os.path.lexists(path):
        return None
    return regular_file(path, what)


def read_json(path: Path, what: str) -> dict[str, Any]:
    """A JSON object file (``path`` from :func:`inside`, at most :data:`MAX_JSON_BYTES`);
    clear errors for the rest."""
    regular_file(path, what)
    if path.stat().st_size > MAX_JSON_BYTES:
        raise ValueError(f"{what} {path.name!r} is larger than {MAX_JSON_BYTES} bytes")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ValueError(f"{what} {path.name!r} is not valid JSON: {err}"[:400]) from None
    if not isinstance(data, dict):
        raise ValueError(f"{what} {path.name!r} must hold a JSON object, got "
                         f"{type(data).__name__}")
    return data


@dataclass(frozen=True)
class TensorHeader:
    """One entry of a checked safetensors header."""

    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def floating(self) -> bool:
        return self.dtype in FLOATING


def read_header(path: Path, name: str | None = None) -> dict[str, TensorHeader]:
    """The checked header of the safetensors file ``path`` (module docstring; ``name``: the
    file's name in the checkpoint, for messages, default ``path.name``); no data read."""
    return read_layout(path, name)[0]


def read_layout(path: Path, name: str | None = None) -> tuple[dict[str, TensorHeader], int]:
    """(:func:`read_header`, the file offset of the data: ``8 + n``), checked alike."""
    regular_file(path, "safetensors file")
    where = f"safetensors file {name or path.name!r}"
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            raise ValueError(f"{where} is too short ({size} bytes) to hold a header")
        (n,) = struct.unpack("<Q", head)
        if n > size - 8 or n > MAX_HEADER_BYTES:
            raise ValueError(f"{where}: header length {n} exceeds the file ({size} bytes) or "
                             f"the limit {MAX_HEADER_BYTES}")
        raw = handle.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ValueError(f"{where}: the header is not valid JSON: {err}"[:400]) from None
    if not isinstance(header, dict):
        raise ValueError(f"{where}: the header must be a JSON object, got "
                         f"{type(header).__name__}")
    data_len = size - 8 - n
    out: dict[str, TensorHeader] = {}
    for name, entry in header.items():
        if name == "__metadata__":  # safetensors requires a str -> str map (issue 40.6)
            if not isinstance(entry, dict) or not all(
                    isinstance(v, str) for v in entry.values()):
                raise ValueError(f"{where}: __metadata__ must map names to strings, got "
                                 f"{json.dumps(entry)[:80]}")
            continue
        out[name] = _entry(where, name, entry, data_len)
    offset = 0
    for name, t in sorted(out.items(), key=lambda kv: (kv[1].begin, kv[1].end)):
        if t.begin != offset:
            raise ValueError(f"{where}: data_offsets of tensor {name!r} overlap or leave a gap "
                             f"(begin {t.begin}, expected {offset})"[:400])
        offset = t.end
    if offset != data_len:
        raise ValueError(f"{where}: data_offsets end at byte {offset}, the data has {data_len} "
                         "bytes (truncated or padded file)")
    return out, 8 + n


def _entry(where: str, name: str, entry: Any, data_len: int) -> TensorHeader:
    what = f"{where}: tensor {name!r}"[:300]
    if not isinstance(entry, dict):
        raise ValueError(f"{what} must be a JSON object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise ValueError(f"{what} has dtype {dtype!r}, not a safetensors dtype "
                         f"({sorted(DTYPE_BYTES)})"[:400])
    if not isinstance(shape, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise ValueError(f"{what} has shape {shape!r}, expected a list of ints >= 0"[:400])
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(
            isinstance(o, int) and not isinstance(o, bool) for o in offsets)
            or not 0 <= offsets[0] <= offsets[1] <= data_len):
        raise ValueError(f"{what} has data_offsets {offsets!r} outside the {data_len} data "
                         "bytes of the file"[:400])
    nbytes = math.prod(shape) * DTYPE_BYTES[dtype]
    if nbytes != offsets[1] - offsets[0]:
        raise ValueError(f"{what}: shape {tuple(shape)} of {dtype} needs {nbytes} bytes, its "
                         f"data_offsets hold {offsets[1] - offsets[0]}"[:400])
    return TensorHeader(dtype, tuple(shape), offsets[0], offsets[1])


def read_tensor(path: Path, entry: TensorHeader, data_start: int,
                name: str | None = None) -> torch.Tensor:
    """One tensor of a safetensors file (``entry`` from :func:`read_layout` of the same file)
    read into fresh memory of its own with ``os.preadv`` of its checked byte range.

    No memory map: only this tensor's bytes become resident in the process (a memory-mapped
    page that was read stays in the process's RSS while the map lives), so a loader that reads
    the tensors one by one and drops each after use holds one tensor of file data at a time.
    The format is little endian (``safetensors`` README); on a big-endian host the bytes of
    each element are reversed."""
    where = f"safetensors file {name or path.name!r}"
    nbytes = entry.end - entry.begin
    raw = torch.empty(nbytes, dtype=torch.uint8)
    if nbytes:
        buffer = memoryview(raw.numpy())
        fd = os.open(path, os.O_RDONLY)
        try:
            done = 0
            while done < nbytes:
                got = os.preadv(fd, [buffer[done:]], data_start + entry.begin + done)
                if got <= 0:
                    raise ValueError(f"{where} ended while its data was read (changed since "
                                     "its header was checked?)")
                done += got
        finally:
            os.close(fd)
    size = DTYPE_BYTES[entry.dtype]
    if sys.byteorder != "little" and size > 1:
        raw = raw.view(-1, size).flip(1).reshape(-1)
    return raw.view(TORCH_DTYPES[entry.dtype]).reshape(entry.shape)
