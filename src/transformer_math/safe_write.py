"""Every file the project writes goes through here: atomic, and contained in its target.

A write is made to a fresh temporary file in the target's own folder (``mkstemp``: created
exclusively, never through a link), flushed and ``fsync``-ed, then renamed over the target.
``rename(2)`` replaces a symbolic link at the target instead of following it, so a link planted
where a report, a results file or a checkpoint goes can never redirect the write to a file
elsewhere; and a process killed at any point leaves either the old complete file or the new one
(POSIX ``rename`` is atomic), never a cut one that a reader would take for valid.

A folder (a checkpoint, a policy) is written into a temporary sibling and swapped in with one
``renameat2(RENAME_EXCHANGE)`` where Linux offers it (else two renames, with the old folder kept
under a hidden name until the new one is in place), so the folder a loader finds is the old save
or the new one, whole. Folders the project creates for its outputs (``figures/`` of a report)
are made by :func:`real_dir`, which replaces a link there by a real folder, so that cleaning old
figures can never delete files in a folder the link pointed at.

Appends (run logs, sweep rows) open the file with ``O_NOFOLLOW``: a link there is refused.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


class UnsafeTargetError(OSError):
    """A write whose target cannot be written safely (a link where a folder is needed...)."""


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _parent(path: Path) -> Path:
    parent = path.parent
    if not parent.is_dir():
        parent.mkdir(parents=True, exist_ok=True)
    return parent


@contextlib.contextmanager
def replacing(path: str | Path, *, text: bool = False, encoding: str = "utf-8"
              ) -> Iterator[Any]:
    """A file object to write ``path``'s new content to; on a clean exit it replaces ``path``
    (a link there is replaced, not followed); on an error the target is untouched."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    parent = _parent(path)
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w" if text else "wb",
                       **({"encoding": encoding, "newline": ""} if text else {})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(parent)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see the module docstring)."""
    with replacing(path) as f:
        f.write(data)
    return Path(path)


def write_text(path: str | Path, text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see the module docstring)."""
    return write_bytes(path, text.encode(encoding))


def save_figure(fig: Any, path: str | Path, **kwargs: Any) -> Path:
    """``fig.savefig`` into memory, then :func:`write_bytes` (matplotlib opens the path it is
    given, and would follow a link there)."""
    buffer = io.BytesIO()
    kwargs.setdefault("format", Path(path).suffix.lstrip(".").lower() or "png")
    fig.savefig(buffer, **kwargs)
    return write_bytes(path, buffer.getvalue())


def real_dir(path: str | Path) -> Path:
    """``path`` as a real folder the project owns: created when missing; a symbolic link there
    is removed (the link only, never what it points at) and a folder made in its place."""
    path = Path(path)
    if path.is_symlink():
        path.unlink()
    if path.exists() and not path.is_dir():
        raise UnsafeTargetError(errno.ENOTDIR, "exists and is not a folder", str(path))
    path.mkdir(parents=True, exist_ok=True)
    return path


def remove_own_files(folder: Path, keep: Callable[[Path], bool]) -> None:
    """Delete the plain files directly in ``folder`` (a real folder, never through a link) for
    which ``keep`` is false; links in it are unlinked, never followed."""
    if folder.is_symlink() or not folder.is_dir():
        return
    for entry in folder.iterdir():
        if (entry.is_symlink() or entry.is_file()) and not keep(entry):
            entry.unlink()


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where
    the system does not offer it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


@contextlib.contextmanager
def replacing_folder(path: str | Path, *, carry: Callable[[Path], bool] | None = None
                     ) -> Iterator[Path]:
    """A fresh temporary sibling folder to write ``path``'s new content into; on a clean exit
    it takes ``path``'s place whole (see the module docstring), on an error it is removed and
    ``path`` is untouched.

    ``carry(entry)``: entries of the old folder (plain files only) to bring into the new one
    before the swap when the new content did not write them (a tokenizer beside a checkpoint).
    A link at ``path`` is replaced by the new folder, never followed.
    """
    path = Path(path)
    if path.exists() and not path.is_symlink() and not path.is_dir():
        raise UnsafeTargetError(errno.ENOTDIR, "exists and is not a folder", str(path))
    parent = _parent(path)
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{path.name}.", suffix=".new"))
    try:
        yield tmp
        old_is_dir = path.is_dir() and not path.is_symlink()
        if old_is_dir and carry is not None:
            for entry in path.iterdir():
                target = tmp / entry.name
                if entry.is_symlink() or not entry.is_file() or target.exists():
                    continue
                if carry(entry):
                    shutil.copy2(entry, target)
        for entry in tmp.iterdir():
            if entry.is_file():
                with open(entry, "rb") as f:
                    os.fsync(f.fileno())
        _fsync_dir(tmp)
        if old_is_dir and _exchange(tmp, path):
            shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the old folder
        elif old_is_dir:
            old = Path(tempfile.mkdtemp(dir=parent, prefix=f".{path.name}.", suffix=".old"))
            os.rmdir(old)
            os.rename(path, old)
            os.rename(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            if path.is_symlink():
                path.unlink()
            os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(parent)


def append_line(path: str | Path, line: str, *, encoding: str = "utf-8") -> None:
    """Append ``line`` (a newline added) to ``path`` and fsync it; a link at ``path`` is
    refused (``O_NOFOLLOW``), the file is created when missing."""
    data = (line.rstrip("\n") + "\n").encode(encoding)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeTargetError(errno.ELOOP, "is a symbolic link: not appended to",
                                    str(path)) from None
        raise
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
