"""Messages: text made at the point of formatting from a catalog id and named arguments.

A :class:`Message` is the English rendering of its id (the English source template, in
:meth:`str.format` syntax with named placeholders, e.g. ``"variance {var:.3g} at d_k = {d_k}"``)
and is a :class:`str`, so every consumer that prints, joins or writes it as JSON keeps working.
It also carries :attr:`~Message.msgid` and :attr:`~Message.args`, so a later reader can render
it in another language from the catalog (:mod:`transformer_math.i18n.catalog`): the Chinese
template in the ``.po`` file uses the same placeholders with the same format specs, so numbers
print the same way in both languages (the gettext convention of an English msgid as the source
language, https://www.gnu.org/software/gettext/manual/gettext.html#Translating-Entries).

Arguments are kept as JSON scalars (``str``, ``int``, ``float``, ``bool``, ``None``) or nested
messages; a NumPy or torch scalar becomes its Python number and anything else its ``str`` when the
message is made, so :meth:`to_json` and :meth:`from_json` round-trip exactly. Pure Python; no
project imports (any layer may import it).
"""

from __future__ import annotations

import numbers
import string
from collections.abc import Mapping
from typing import Any

Scalar = str | int | float | bool | None


def _arg(name: str, value: Any) -> Any:
    if value is None or isinstance(value, Message | str | bool | int | float):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", None) == 0:  # a 0-d tensor or array
        return _arg(name, item())
    return str(value)


def placeholders(template: str) -> dict[str, str]:
    """The named fields of a :meth:`str.format` template and their ``!conv:spec`` suffixes
    (``"{a:.3g} {b}"`` -> ``{"a": ":.3g", "b": ""}``); a positional or nested field is a
    ``ValueError`` (messages name every argument)."""
    out: dict[str, str] = {}
    for _, field_name, spec, conv in string.Formatter().parse(template):
        if field_name is None:
            continue
        if not field_name.isidentifier():
            raise ValueError(f"template field {field_name!r} is not a name: {template!r}")
        if "{" in (spec or ""):
            raise ValueError(f"template field {field_name!r} has a nested spec: {template!r}")
        suffix = (f"!{conv}" if conv else "") + (f":{spec}" if spec else "")
        if out.setdefault(field_name, suffix) != suffix:
            raise ValueError(f"template field {field_name!r} appears with two formats")
    return out


class Message(str):
    """The English text of ``msgid.format(**args)``, with the id and arguments it was made from.

    ``str(message)`` is the message itself (so ``str()`` on the way to a translator keeps it).
    """

    msgid: str
    args: dict[str, Any]

    def __new__(cls, msgid: str, /, **args: Any) -> Message:
        if not isinstance(msgid, str):
            raise TypeError(f"msgid must be a str, got {type(msgid).__name__}")
        names = placeholders(msgid)
        kept = {k: _arg(k, v) for k, v in args.items()}
        if set(names) != set(kept):
            raise ValueError(f"msgid {msgid!r} names {sorted(names)}, arguments given "
                             f"{sorted(kept)}")
        self = super().__new__(cls, msgid.format(**kept))
        self.msgid = msgid
        self.args = kept
        return self

    def __str__(self) -> str:
        return self

    def __getnewargs_ex__(self) -> tuple[tuple[str], dict[str, Any]]:
        return (self.msgid,), dict(self.args)

    def __getstate__(self) -> None:
        return None

    def to_json(self) -> dict[str, Any]:
        """``{"id": msgid, "args": {...}}`` (nested messages as the same objects)."""
        return {"id": self.msgid, "args": {k: v.to_json() if isinstance(v, Message) else v
                                          for k, v in self.args.items()}}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Message:
        """The message :meth:`to_json` wrote; a mapping argument is a nested message."""
        args = data.get("args") or {}
        return Message(str(data["id"]), **{
            k: Message.from_json(v) if isinstance(v, Mapping) else v for k, v in args.items()})


def msg(msgid: str, /, **args: Any) -> Message:
    """A :class:`Message`; the call ``tools/i18n_catalog.py extract`` finds in ``src/`` (its
    first argument must be a string literal, so the id can be read without running code)."""
    return Message(msgid, **args)


# --- messages in a JSON document (the results' claim entries) ---------------------------------


def collect(value: Any) -> list[dict[str, Any]]:
    """Every distinct :class:`Message` inside ``value`` (nested lists, tuples and dicts), as
    ``{"text": English, "id": msgid, "args": {...}}``: what a claim entry of the results stores
    under ``"messages"`` so that a report rendered later can translate its notes and labels."""
    found: dict[str, dict[str, Any]] = {}
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Message):
            found.setdefault(str.__str__(v), {"text": str.__str__(v), **v.to_json()})
        elif isinstance(v, Mapping):
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
    return [found[k] for k in sorted(found)]


def with_messages(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with ``"messages"`` (:func:`collect`) added when it holds a message."""
    table = collect(entry)
    return {**entry, "messages": table} if table else entry


def revive(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a claim entry read back from JSON whose strings listed in its ``"messages"`` are
    :class:`Message` objects again (unchanged strings elsewhere; a malformed table is ignored:
    the text is then shown in English)."""
    table: dict[str, Message] = {}
    for item in entry.get("messages") or []:
        try:
            m = Message.from_json(item)
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
        if str.__str__(m) == item.get("text"):
            table[str.__str__(m)] = m

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return table.get(v, v)
        if isinstance(v, Mapping):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    if not table:
        return dict(entry)
    return {k: (v if k == "messages" else walk(v)) for k, v in entry.items()}
