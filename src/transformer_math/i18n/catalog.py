"""The message catalogs: a :class:`~transformer_math.i18n.message.Message` rendered in a language.

The Chinese catalog is ``locale/zh/LC_MESSAGES/transformer_math.po`` next to this file (gettext's
layout, https://www.gnu.org/software/gettext/manual/gettext.html#Locating-Catalogs); the
standard library's :mod:`gettext` reads the compiled ``.mo`` beside it (committed, and rebuilt
from the ``.po`` by ``make i18n``, i.e. ``tools/i18n_catalog.py``; a test checks the two agree).
An entry's ``msgstr`` is a :meth:`str.format` template with the msgid's placeholders and format
specs, so ``{var:.3g}`` prints the same digits in both languages. English is the source language:
it needs no catalog. A message without an entry (or whose entry does not format with the
message's arguments) is shown in English.
"""

from __future__ import annotations

import gettext
from functools import cache
from pathlib import Path
from typing import Any

from transformer_math.i18n.message import Message

DOMAIN = "transformer_math"
LOCALE_DIR = Path(__file__).parent / "locale"
CATALOG_LANGS = ("zh",)


def po_path(lang: str) -> Path:
    """The ``.po`` source of ``lang``'s catalog."""
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


@cache
def translations(lang: str) -> gettext.NullTranslations:
    """``lang``'s compiled catalog (a ``NullTranslations``, which translates nothing, for English
    and for a language whose ``.mo`` is absent)."""
    if lang not in CATALOG_LANGS:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, str(LOCALE_DIR), languages=[lang], fallback=True)


def template(msgid: str, lang: str) -> str | None:
    """The catalog's ``lang`` template of ``msgid``; None when it has none."""
    out = translations(lang).gettext(msgid)
    return None if out == msgid and lang != "en" else out


def render(message: Message, lang: str) -> str:
    """``message`` in ``lang``: its catalog template formatted with its arguments, nested
    messages rendered in ``lang`` too; the English text when the catalog has no entry."""
    if lang == "en":
        return str.__str__(message)
    found = template(message.msgid, lang)
    if found is None:
        return str.__str__(message)
    args: dict[str, Any] = {k: render(v, lang) if isinstance(v, Message) else v
                            for k, v in message.args.items()}
    try:
        return found.format(**args)
    except (KeyError, IndexError, ValueError):
        return str.__str__(message)


def exact(s: str, lang: str) -> str | None:
    """The catalog's ``lang`` text of a plain string that is a message without arguments (its
    msgid is ``s`` with braces doubled); None when there is none."""
    msgid = s.replace("{", "{{").replace("}", "}}")
    found = template(msgid, lang)
    if found is None:
        return None
    try:
        return found.format()
    except (KeyError, IndexError, ValueError):
        return None
