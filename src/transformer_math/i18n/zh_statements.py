"""Chinese statements of the claims, by claim id (claims written later carry ``statement_zh``
themselves). A translation states the same claim as the English ``statement``: no more, no less.
"""

from __future__ import annotations

ZH_STATEMENTS: dict[str, str] = {}
