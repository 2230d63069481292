"""The results log: one JSON line per finished task, appended as it finishes, read back by
``--resume``.

The first line is a header naming the run's settings (:class:`~.tasks.RunSettings`: seed,
seeds, size, threads) and the package version; every further line is one task's result::

    {"claim": "icl.induction-heads", "version": 2, "seed": 1, "payload": {...}}

A line is written with one ``write`` on a file opened for appending, then flushed and
``fsync``-ed before the next task is recorded, so a crash (a killed driver, a lost machine)
leaves every finished task on disk and at most the last line cut short. Reading drops such a
cut-short last line (and cuts it off the file before anything is appended); any other line
that is not a well-formed result is an error naming the line. A task already in the log is
never written again, so a log holds each (claim, seed) once. A line of a claim whose
``version`` is not the registered one is stale: it is skipped, and the task reruns.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformer_math.execution import codec
from transformer_math.execution.tasks import RunSettings, TaskKey, validate_payload

KIND = "transformer-math/run-log"
FORMAT = 1
MAX_BYTES = 512 * 2**20  # a log is a few MiB even for the full tier with many seeds


_HELD: dict[str, int] = {}
"""The logs this process holds the lock of (real path -> descriptor), kept until it exits."""


class LogError(ValueError):
    """A results log that cannot be used for this run (the message names the file and line)."""


@dataclass
class ResultsLog:
    """An open results log: the tasks it holds and a way to append more."""

    path: Path
    settings: RunSettings
    entries: dict[TaskKey, dict[str, Any]] = field(default_factory=dict)
    stale: int = 0
    dropped_tail: bool = False
    #: the open descriptor holding the log's lock (one run writes a log at a time)
    lock_fd: int | None = None

    def _lock(self) -> None:
        """Take the log's exclusive lock for the life of this process (``flock``): a second
        run on the same log is refused instead of appending the same tasks."""
        import fcntl

        key = os.path.realpath(self.path)
        if key in _HELD:  # this process holds it already (a log created, then resumed)
            self.lock_fd = _HELD[key]
            return
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise LogError(f"results log {str(self.path)!r} is in use by another run; wait for "
                           "it to finish or name another log") from None
        _HELD[key] = fd
        self.lock_fd = fd

    @classmethod
    def create(cls, path: Path, settings: RunSettings) -> ResultsLog:
        """Start a new log at ``path`` (which must not exist: a log is never overwritten)."""
        from transformer_math import __version__

        header = {"kind": KIND, "format": FORMAT, "settings": settings.to_json(),
                  "version": __version__}
        try:
            with open(path, "x", encoding="utf-8") as f:
                f.write(json.dumps(header, allow_nan=False) + "\n")
                f.flush()
                os.fsync(f.fileno())
        except FileExistsError:
            raise LogError(f"results log {str(path)!r} exists; pass --resume {path} to "
                           "continue it, or name a new file") from None
        except OSError as exc:
            raise LogError(f"cannot create results log {str(path)!r}: {exc.strerror or exc}"
                           ) from None
        log = cls(path=path, settings=settings)
        log._lock()
        return log

    @classmethod
    def open(cls, path: Path, settings: RunSettings, versions: Mapping[str, int]) -> ResultsLog:
        """Read the log at ``path`` to continue it with a run of ``settings`` (``versions``: the
        registered claims' versions)."""
        if path.is_symlink():
            raise LogError(f"results log {str(path)!r} is a symbolic link; name the file itself")
        log = cls(path=path, settings=settings)
        try:
            log._lock()
            size = path.stat().st_size
            if size > MAX_BYTES:
                raise LogError(f"results log {str(path)!r} is {size} bytes, above the "
                               f"{MAX_BYTES}-byte limit")
            raw = path.read_bytes()
        except OSError as exc:
            raise LogError(f"cannot read results log {str(path)!r}: {exc.strerror or exc}"
                           ) from None
        complete, _, tail = raw.rpartition(b"\n")
        if tail:  # the last write was cut short: drop it (it is re-run)
            log.dropped_tail = True
        lines = complete.split(b"\n") if complete else []
        if not lines:
            raise LogError(f"results log {str(path)!r} has no header line")
        for number, line in enumerate(lines, start=1):
            try:
                item = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise LogError(f"{path}:{number}: not a JSON line ({exc})") from None
            if number == 1:
                log._check_header(item)
            else:
                log._add(item, number, versions)
        if log.dropped_tail:
            with open(path, "r+b") as f:
                f.truncate(len(complete) + 1)
                f.flush()
                os.fsync(f.fileno())
        return log

    def close(self) -> None:
        """Release the log's lock (a process exiting releases it too)."""
        key = os.path.realpath(self.path)
        fd = _HELD.pop(key, None)
        if fd is not None:
            os.close(fd)
        self.lock_fd = None

    def _check_header(self, item: Any) -> None:
        if not isinstance(item, dict) or item.get("kind") != KIND:
            raise LogError(f"{self.path}:1: not a transformer-math results log (no header "
                           f"{KIND!r})")
        if item.get("format") != FORMAT:
            raise LogError(f"{self.path}:1: log format {item.get('format')!r}, this version "
                           f"reads {FORMAT}")
        from transformer_math import __version__

        if item.get("version") != __version__:
            raise LogError(f"{self.path}:1: written by transformer-math "
                           f"{item.get('version')!r}, this is {__version__}: its results are "
                           "not this version's; start a new log")
        theirs = item.get("settings")
        ours = self.settings.to_json()
        if theirs != ours:
            diff = ", ".join(f"{k} {theirs.get(k)!r} (this run {v!r})" for k, v in ours.items()
                             if not isinstance(theirs, dict) or theirs.get(k) != v)
            raise LogError(f"{self.path} was written by a run with other settings: {diff}; "
                           "resume with the same --seed, --seeds, --size and --threads")

    def _add(self, item: Any, number: int, versions: Mapping[str, int]) -> None:
        where = f"{self.path}:{number}"
        if not isinstance(item, dict) or set(item) != {"claim", "version", "seed", "payload"}:
            raise LogError(f"{where}: a result line has exactly claim, version, seed, payload")
        claim, version, seed = item["claim"], item["version"], item["seed"]
        if not isinstance(claim, str) or not isinstance(version, int) or not (
                seed is None or (isinstance(seed, int) and not isinstance(seed, bool))):
            raise LogError(f"{where}: claim must be a string, version an int, seed an int or "
                           "null")
        if claim not in versions:
            raise LogError(f"{where}: claim {claim!r} is not registered in this version")
        if versions[claim] != version:
            self.stale += 1  # a claim whose check changed since: the task reruns
            return
        key = TaskKey(claim, seed)
        if key in self.entries:
            raise LogError(f"{where}: {key.label()} is already in the log")
        try:
            validate_payload(key, item["payload"])
        except codec.CodecError as exc:
            raise LogError(f"{where}: {exc}") from None
        self.entries[key] = item["payload"]

    def append(self, key: TaskKey, version: int, payload: Mapping[str, Any]) -> None:
        """Record a finished task (once: a task already logged is an error)."""
        if key in self.entries:
            raise LogError(f"{key.label()} is already in {self.path}")
        line = json.dumps({"claim": key.claim, "version": version, "seed": key.seed,
                           "payload": payload}, allow_nan=False, separators=(",", ":")) + "\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
            try:
                data = line.encode("utf-8")
                written = os.write(fd, data)
                while written < len(data):  # a short write on a full disk or a signal
                    written += os.write(fd, data[written:])
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:  # a full disk: the line is cut, and the next resume drops it
            raise LogError(f"cannot append to results log {str(self.path)!r}: "
                           f"{exc.strerror or exc}; the log stays resumable") from None
        self.entries[key] = dict(payload)

    def keys(self) -> Iterable[TaskKey]:
        return self.entries.keys()
