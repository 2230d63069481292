"""The Chinese catalogs (``i18n.zh_statements``, ``i18n.zh_text``): every registered claim has a
Chinese statement, every catalog entry is well formed, and a fixed sample of real figure labels
and notes (copied from a quick-tier run, ``tmath verify --tier quick --size tiny``) is covered.

No claim is run: the registry is only imported, so the file takes well under a second.
"""

from __future__ import annotations

import re

import pytest

from transformer_math.claims.registry import all_claims
from transformer_math.i18n import has_statement, statement, text, translated
from transformer_math.i18n.zh_statements import ZH_STATEMENTS
from transformer_math.i18n.zh_text import ZH_TEXT

CJK = re.compile(r"[\u3400-\u9fff]")
# Numbers as they appear in statements and labels: 3, 0.5, 1,050,624, 1e-5, 5.9e-03.
NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:e[-+]?\d+)?")


def _numbers(s: str) -> list[str]:
    return NUMBER.findall(s)


# --- statements -----------------------------------------------------------------------------------


def test_every_registered_claim_has_a_chinese_statement() -> None:
    missing = [c.id for c in all_claims() if not has_statement(c, "zh")]
    assert not missing, f"claims without statement_zh or a ZH_STATEMENTS entry: {missing}"


def test_chinese_statements_are_chinese() -> None:
    for c in all_claims():
        zh = statement(c, "zh")
        assert zh.strip() and zh != c.statement, c.id
        assert CJK.search(zh), f"{c.id}: Chinese statement has no CJK characters"


def test_catalog_statements_name_registered_claims() -> None:
    ids = {c.id for c in all_claims()}
    stale = sorted(set(ZH_STATEMENTS) - ids)
    assert not stale, f"ZH_STATEMENTS entries for claims that are not registered: {stale}"


def test_catalog_statements_in_use_keep_the_numbers() -> None:
    """A catalog entry that :func:`statement` actually returns (the claim has no ``statement_zh``
    of its own) states every number of the English statement: a statement bumped without its
    translation shows up here."""
    for c in all_claims():
        if getattr(c, "statement_zh", None) or c.id not in ZH_STATEMENTS:
            continue
        zh = ZH_STATEMENTS[c.id]
        missing = [n for n in _numbers(c.statement) if n not in zh]
        assert not missing, f"{c.id}: numbers of the English statement missing in Chinese {missing}"


def test_statement_lookup_on_json_documents() -> None:
    claim_id, zh = next(iter(ZH_STATEMENTS.items()))
    doc = {"id": claim_id, "statement": "English"}
    assert statement(doc, "zh") == zh and has_statement(doc, "zh")
    assert statement(doc, "en") == "English"
    own = {"id": "x.unknown", "statement": "English", "statement_zh": "中文"}
    assert statement(own, "zh") == "中文"
    bare = {"id": "x.unknown", "statement": "English"}
    assert statement(bare, "zh") == "English" and not has_statement(bare, "zh")


# --- free text: exact entries ---------------------------------------------------------------


def test_exact_entries_are_chinese() -> None:
    for en, zh in ZH_TEXT.items():
        assert en.strip() and zh.strip(), repr(en)
        assert zh != en, f"entry maps to itself: {en!r}"
        assert CJK.search(zh), f"no CJK characters in the translation of {en!r}"
        missing = [n for n in _numbers(en) if n not in zh]
        assert not missing, f"{en[:60]!r}: numbers missing in Chinese {missing}"


# --- coverage on real labels and notes -------------------------------------------------------

# Copied from `tmath verify --tier quick --size tiny --json` (seed 0): titles, axis, series and
# line labels of several claims' figures. The claims make them as messages (i18n.msg) now; the
# same text as a plain string is translated too (the catalog's argument-free msgid). Messages
# with arguments are checked in test_message_catalog.py (every msgid translated; real claims'
# Chinese unchanged).
REAL_LABELS = [
    "M (elements)",
    "elements moved",
    "tiled (counted)",
    "standard attention",
    "Pre-LN (theory: L^-1/2)",
    "Stack of project blocks x + (T/L) FFN(LN x) vs ODE solution (forward Euler)",
    "no residual, no norm x <- FFN_l(x): largest singular value",
    "unscaled (measured)",
    "||softmax Jacobian||_2",
    "L stacked GD layers: distance to OLS",
    "prior 1/M",
    "log n: uniform (mean of V)",
    "pair index i (0 = highest frequency)",
    "Hahn bound 4 V e^{2B} ||W_O|| / N",
    "PARITY construction: decision margin vs n",
]

@pytest.mark.parametrize("english", REAL_LABELS)
def test_real_text_is_translated_with_its_numbers(english: str) -> None:
    assert translated(english, "zh"), f"no Chinese for {english!r}"
    zh = text(english, "zh")
    assert zh != english and CJK.search(zh)
    missing = [n for n in _numbers(english) if n not in zh]
    assert not missing, f"numbers lost in translation of {english!r}: {missing}"


def test_notes_composed_from_records_are_translated() -> None:
    """What ZH_TEXT is left for: the notes two claims compose from their tables of records
    (built here the way the claims build them)."""
    from transformer_math.claims.computation.circuits import _AUDIT
    from transformer_math.claims.robotics.sources import CORRECTIONS

    notes = [f"{a['item']}: seed says {a['seed']}; source says {a['paper']} -> {a['status']}"
             for a in _AUDIT]
    notes += [f"000:{c.line}: {c.correct} ({c.source})" for c in CORRECTIONS]
    missing = [n[:70] for n in notes if not translated(n, "zh")]
    assert not missing, missing


def test_untranslated_text_is_returned_unchanged() -> None:
    english = "a sentence no check writes"
    assert not translated(english, "zh")
    assert text(english, "zh") == english and text(english, "en") == english
