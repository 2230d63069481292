"""Chinese and English: the report's and the terminal's words in either language.

The seeds are Chinese and so are most readers; the project's own text (claim statements, notes,
figure labels, the report's headings) is written in English and translated here:

- :func:`statement` gives a claim's statement in a language: English as written; Chinese from
  the claim's own ``statement_zh`` or, for the claims written before it existed, the catalog
  :data:`~transformer_math.i18n.zh_statements.ZH_STATEMENTS` (by claim id);
- :func:`ui` gives an interface string (headings, column names, buttons) by key
  (:data:`~transformer_math.i18n.ui.UI`);
- :func:`text` translates free text a check produced (notes, figure titles, axis and series
  labels). A :class:`~transformer_math.i18n.message.Message` (made where the text is formatted,
  ``msg("variance {var:.3g} at d_k = {d_k}", var=..., d_k=...)``) is rendered from the message
  catalog (:mod:`~transformer_math.i18n.catalog`, gettext ``.po``/``.mo`` files) with its own
  arguments. A plain string is looked up as an argument-free msgid of the catalog, then as an
  exact entry of :data:`~transformer_math.i18n.zh_text.ZH_TEXT` (the few texts not yet made as
  messages where they are formatted), else it is returned unchanged;
  :func:`translated` says whether a translation exists, so tests can measure coverage. A claim
  entry read back from JSON gets its messages back with
  :func:`~transformer_math.i18n.message.revive`.

Pure data and string functions; no project imports besides the catalogs (any layer may import).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformer_math.i18n import catalog
from transformer_math.i18n.message import Message, msg, revive, with_messages
from transformer_math.i18n.ui import UI
from transformer_math.i18n.zh_statements import ZH_STATEMENTS
from transformer_math.i18n.zh_text import ZH_TEXT

LANGS = ("en", "zh")

__all__ = ["LANGS", "Message", "check_lang", "has_statement", "msg", "revive", "statement",
           "text", "translated", "ui", "with_messages"]

def check_lang(lang: str) -> str:
    """``lang`` if it is one of :data:`LANGS`, else a ``ValueError`` naming the argument."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {list(LANGS)}, got {lang!r}")
    return lang


def _zh(s: str) -> str | None:
    if isinstance(s, Message):
        if catalog.template(s.msgid, "zh") is not None:
            return catalog.render(s, "zh")
        s = str.__str__(s)
    found = catalog.exact(s, "zh")
    if found is not None:
        return found
    return ZH_TEXT.get(s)


def translated(s: str, lang: str = "zh") -> bool:
    """True when :func:`text` has a translation of ``s`` into ``lang`` (English always has)."""
    check_lang(lang)
    return lang == "en" or not s.strip() or _zh(s) is not None


def text(s: str, lang: str) -> str:
    """``s`` in ``lang`` (free text from a check); unchanged when no translation exists."""
    check_lang(lang)
    if lang == "en" or not s:
        return s
    out = _zh(s)
    return s if out is None else out


def ui(key: str, lang: str, **values: Any) -> str:
    """The interface string ``key`` in ``lang``, formatted with ``values``; an unknown key is a
    ``KeyError`` (a typo must not silently show the key)."""
    check_lang(lang)
    entry = UI[key]
    return entry.get(lang, entry["en"]).format(**values)


def statement(claim: Any, lang: str) -> str:
    """A claim's statement in ``lang``: a :class:`~transformer_math.claims.registry.Claim` or a
    claim's JSON (``id``, ``statement``, optional ``statement_zh``). Without a Chinese version
    the English one is returned (:func:`has_statement` tells which)."""
    check_lang(lang)
    get = claim.get if isinstance(claim, Mapping) else (lambda k, d=None: getattr(claim, k, d))
    english = get("statement", "") or ""
    if lang == "en":
        return english
    return get("statement_zh", None) or ZH_STATEMENTS.get(get("id", ""), english)


def has_statement(claim: Any, lang: str) -> bool:
    """True when :func:`statement` has ``claim`` in ``lang`` (not the English fallback)."""
    check_lang(lang)
    if lang == "en":
        return True
    get = claim.get if isinstance(claim, Mapping) else (lambda k, d=None: getattr(claim, k, d))
    return bool(get("statement_zh", None) or get("id", "") in ZH_STATEMENTS)
