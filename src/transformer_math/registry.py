"""One registry class for everything chosen by name: backends, RoPE types, norms, feed-forwards,
positions, policies, benchmarks, claims.

Pattern (lm-evaluation-harness ``Registry``; Hugging Face ``ROPE_INIT_FUNCTIONS``): a named table
of entries, each with metadata that its consumers read instead of keeping their own lists. A
RoPE type carries its parameter names, defaults and whether it depends on the sequence length; an
attention backend whether it is exact and whether it can return weights. Duplicate names raise;
an unknown name raises a ``ValueError`` naming the registry and the known names.

Usage::

    NORMS = Registry("norm")

    @NORMS.register("rmsnorm", params=("eps",))
    class RMSNorm(nn.Module): ...

    NORMS.get("rmsnorm")            # the class
    NORMS.metadata("rmsnorm")       # {"params": ("eps",)}
    NORMS.names()                   # ("rmsnorm", ...) in registration order

The registry is also a read-only mapping (``name in R``, ``R[name]``, ``list(R)``), so code that
looked names up in a plain dict keeps working.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered object and its metadata (read-only)."""

    name: str
    value: T
    metadata: Mapping[str, Any] = field(default_factory=dict)


class Registry(Mapping[str, T]):
    """Name -> object with metadata; duplicate names raise; lookups name what is known.

    ``kind`` is what the entries are ("attention backend", "rope type"), used in errors.
    ``base`` (optional) is a class every registered class must subclass.
    """

    def __init__(self, kind: str, *, base: type | None = None) -> None:
        self.kind = kind
        self.base = base
        self._entries: dict[str, Entry[T]] = {}

    # ------------------------------------------------------------------ registration
    def add(self, name: str, value: T, **metadata: Any) -> T:
        """Register ``value`` under ``name``; re-registering the same object is a no-op."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")
        old = self._entries.get(name)
        if old is not None:
            if old.value is value:
                return value
            raise ValueError(f"{self.kind} {name!r} is already registered")
        if self.base is not None and not (isinstance(value, type) and issubclass(value, self.base)):
            raise TypeError(f"{self.kind} {name!r} must be a subclass of {self.base.__name__}, "
                            f"got {value!r}")
        self._entries[name] = Entry(name, value, MappingProxyType(dict(metadata)))
        return value

    def register(self, name: str, **metadata: Any) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""

        def decorate(value: T) -> T:
            return self.add(name, value, **metadata)

        return decorate

    def remove(self, name: str) -> None:
        """Drop an entry (tests that register temporary entries clean up with this)."""
        self._entries.pop(name, None)

    # ------------------------------------------------------------------ lookup
    def get(self, name: str, default: Any = None) -> T:  # type: ignore[override]
        """The object registered as ``name``; an unknown name raises ``ValueError``.

        (Unlike ``dict.get`` there is no silent default unless one is passed explicitly.)
        """
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            if default is not None:
                return default
            raise ValueError(f"{self.kind} must be one of {list(self._entries)}, got {name!r}")
        return entry.value

    def entry(self, name: str) -> Entry[T]:
        self.get(name)  # raises on an unknown name
        return self._entries[name]

    def metadata(self, name: str) -> Mapping[str, Any]:
        return self.entry(name).metadata

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def entries(self) -> tuple[Entry[T], ...]:
        return tuple(self._entries.values())

    def where(self, **metadata: Any) -> tuple[str, ...]:
        """Names whose metadata has every given key equal to the given value."""
        return tuple(e.name for e in self._entries.values()
                     if all(e.metadata.get(k) == v for k, v in metadata.items()))

    # ------------------------------------------------------------------ Mapping protocol
    def __getitem__(self, name: str) -> T:
        if name not in self._entries:
            raise KeyError(name)
        return self._entries[name].value

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self._entries)})"
