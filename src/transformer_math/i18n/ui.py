"""Interface strings by key, in English and Chinese (headings, column names, labels, buttons).

Each entry is ``{"en": ..., "zh": ...}``; ``{name}`` fields are filled by
:func:`transformer_math.i18n.ui`.
"""

from __future__ import annotations

UI: dict[str, dict[str, str]] = {
    "verdict.verified": {"en": "verified", "zh": "已验证"},
    "verdict.refuted": {"en": "refuted", "zh": "已驳斥"},
    "verdict.failed": {"en": "failed", "zh": "失败"},
    "verdict.cited": {"en": "cited", "zh": "引用"},
}
