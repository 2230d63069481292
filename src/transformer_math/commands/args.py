"""Checks of command-line arguments shared by every ``tmath`` command (no ``register``: this
module adds no command).

Contract (the CLI's, see ``transformer_math.cli``): every number a command takes is checked for
finiteness and range, and every output path for a usable parent folder, *before* any work; a
failed check prints one line, ``tmath CMD: error: ...`` (:func:`error_line`), and exits 2
(:func:`fail`). Results that overflow are an error too, never
``inf``/``NaN`` output: :func:`finite_result` and :func:`json_text` refuse them.

:func:`internal_work` marks the part of a command that runs library code on already validated
input (claims, benchmarks, the bug zoo): a ``ValueError``/``TypeError``/``OSError`` raised
there is a bug of ours and keeps its traceback instead of becoming a one-line user error.

Imports only ``typer`` and the standard library, so ``tmath --help`` stays fast.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import typer

try:  # typer vendors click from 0.2x on
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover - older typer depends on click itself
    from click import get_current_context  # type: ignore[no-redef]

MAX_SEED = 2**63 - 1
"""Largest ``--seed`` (torch generators take signed 64-bit seeds)."""
MAX_THREADS = 1024
"""Largest ``--threads``."""
MAX_SEEDS = 1000
"""Most seeds one command runs (``--seeds``)."""
MAX_REPEATS = 100_000
"""Largest ``--repeats`` of ``tmath bench``."""
MAX_WORKERS = 4096
"""Most Ray tasks one run keeps in flight (``--workers``)."""

_RAY_ADDRESS = re.compile(r"(auto|(ray://)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?:(\d{1,5}))")

FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg")
"""Figure formats the commands write (matplotlib picks the format from the suffix)."""


_BIDI = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))


def terminal_safe(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every control character (escape sequences that set a terminal's title or
    clear its screen, bidirectional overrides) shown as a ``\\x1b``-style escape, so that a
    string read from a user's file cannot act on the terminal it is printed to (issue 40)."""
    out = []
    for ch in str(text):
        code = ord(ch)
        if (ch == "\n" and keep_newlines) or ch == "\t":
            out.append(ch)
        elif code < 0x20 or 0x7F <= code < 0xA0 or code in _BIDI:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def error_line(where: str, message: str, *, hint: bool = True) -> str:
    """The one line a user mistake prints: ``tmath CMD: error: MESSAGE (see 'tmath CMD --help')``
    (``where`` is the command path; whitespace in ``message`` is collapsed, control characters
    escaped)."""
    text = f"{where}: error: {terminal_safe(' '.join(str(message).split()), keep_newlines=False)}"
    return f"{text} (see '{where} --help')" if hint else text


def fail(message: str) -> NoReturn:
    """Print ``message`` as the one-line error of the running command and exit 2.

    Prints itself rather than raising a click ``UsageError``, so the line is the same whether
    the command runs in ``tmath`` or in another typer application (tests).
    """
    ctx = get_current_context(silent=True)
    typer.echo(error_line(ctx.command_path if ctx is not None else "tmath", message), err=True)
    raise typer.Exit(2)


def number(option: str, value: Any, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False) -> float:
    """``value`` as a finite float in the range ``[low, high]`` (``(`` / ``)`` when open).

    ``None`` passes through unchanged (an option that was not given). Raises
    a one-line error (:func:`fail`) naming ``option`` otherwise.
    """
    if value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        fail(f"{option} must be a number, got {value!r}")
    try:
        x = float(value)
    except OverflowError:  # an int beyond the float range
        fail(f"{option} must be a finite number, got {value}")
    if not math.isfinite(x):
        fail(f"{option} must be a finite number, got {value}")
    if low is not None and (x <= low if low_open else x < low):
        fail(f"{option} must be {'>' if low_open else '>='} {low:g}, got {value:g}")
    if high is not None and (x >= high if high_open else x > high):
        fail(f"{option} must be {'<' if high_open else '<='} {high:g}, got {value:g}")
    return x


def integer(option: str, value: Any, *, low: int | None = None,
            high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``; ``None`` passes through; else :func:`fail`."""
    if value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        fail(f"{option} must be an integer, got {value!r}")
    if low is not None and value < low:
        fail(f"{option} must be >= {low}, got {value}")
    if high is not None and value > high:
        fail(f"{option} must be <= {high}, got {value}")
    return value


def ray_address(option: str, value: str | None) -> str | None:
    """``value`` when it is a Ray address (``HOST:PORT``, ``ray://HOST:PORT`` or ``auto``, the
    forms ``ray.init(address=...)`` takes), else :func:`fail`; ``None`` passes through."""
    if value is None:
        return None
    m = _RAY_ADDRESS.fullmatch(value)
    if m is None or (m.group(4) is not None and not 1 <= int(m.group(4)) <= 65535):
        fail(f"{option} must be HOST:PORT, ray://HOST:PORT or auto (a Ray cluster's address), "
             f"got {value!r}")
    return value


def output_file(option: str, path: str | Path | None, *, suffixes: tuple[str, ...] = (),
                make_parents: bool = False) -> Path | None:
    """Check, before any work, that ``path`` can be written: not a folder, its parent folder
    exists (with ``make_parents`` it is created now, as the write would create it) and is
    writable, and its suffix is one of ``suffixes`` (when given). ``None`` passes through."""
    if path is None:
        return None
    p = Path(path)
    if suffixes and p.suffix.lower() not in suffixes:
        fail(f"{option} must end in {', '.join(suffixes)}, got {str(p)!r}")
    if p.is_dir():
        fail(f"{option} {str(p)!r} is a folder, expected a file path")
    _writable_folder(option, p.parent, make_parents=make_parents, what=str(p))
    return p


def output_folder(option: str, path: str | Path | None) -> Path | None:
    """Check, before any work, that folder ``path`` exists or create it (``None`` passes)."""
    if path is None:
        return None
    p = Path(path)
    if p.exists() and not p.is_dir():
        fail(f"{option} {str(p)!r} exists and is not a folder")
    _writable_folder(option, p, make_parents=True, what=str(p))
    return p


def _writable_folder(option: str, folder: Path, *, make_parents: bool, what: str) -> None:
    folder = folder if str(folder) else Path(".")
    if make_parents and not folder.is_dir():
        try:  # created now, as the write at the end would, so that it cannot fail then
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            fail(f"cannot write {option} {what!r}: cannot create folder {str(folder)!r} "
                 f"({exc.strerror or exc})")
    if not folder.is_dir():
        fail(f"cannot write {option} {what!r}: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        fail(f"cannot write {option} {what!r}: folder {str(folder)!r} is not writable")


def input_file(option: str, path: str | Path) -> Path:
    """``path`` as a Path when it is an existing regular file, else :func:`fail`."""
    p = Path(path)
    if not p.is_file():
        fail(f"{option} {str(p)!r} is not an existing file")
    return p


def finite_result(name: str, value: float, given: str) -> float:
    """``value`` when it is a finite float; else :func:`fail` saying that the result ``name``
    overflows for the input ``given`` (e.g. ``"--params 1e308"``)."""
    if not math.isfinite(value):
        fail(f"{given} is out of range: {name} would be {value}")
    return value


def json_text(document: Any, **kwargs: Any) -> str:
    """Strict JSON (``allow_nan=False``); a NaN or infinity in ``document`` is a
    a one-line error (:func:`fail`) (the inputs produced a result outside the float range)."""
    try:
        return json.dumps(document, allow_nan=False, **kwargs)
    except ValueError:
        fail(f"the result is not finite (overflow): {_non_finite_keys(document)}")


def _non_finite_keys(document: Any, prefix: str = "") -> str:
    stack: list[tuple[str, Any]] = [(prefix, document)]
    found: list[str] = []
    while stack and len(found) < 5:
        key, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            found.append(f"{key or 'value'} = {value}")
        elif isinstance(value, dict):
            stack.extend((f"{key}.{k}" if key else str(k), v) for k, v in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((f"{key}[{i}]", v) for i, v in enumerate(value))
    return ", ".join(sorted(found)) or "a non-finite number"


@contextmanager
def internal_work() -> Iterator[None]:
    """Run library code on validated input: a ``ValueError``, ``TypeError`` or ``OSError``
    raised inside is marked as a bug of ours, so that ``tmath`` shows its traceback rather than
    a one-line user error."""
    try:
        yield
    except (ValueError, TypeError, OSError) as exc:
        exc.tmath_internal = True  # type: ignore[attr-defined]
        raise


def is_internal(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside :func:`internal_work`."""
    return bool(getattr(exc, "tmath_internal", False))
