"""Chinese for the free text checks produce: notes, figure titles, axis and series labels.

``ZH_TEXT`` maps an exact English string to its Chinese; ``ZH_PATTERNS`` is a list of
``(regular expression, template)``: the expression must match the whole English text, and the
template (``re.Match.expand`` syntax, ``\\1`` or ``\\g<name>``) keeps the numbers it captured.
"""

from __future__ import annotations

ZH_TEXT: dict[str, str] = {}

ZH_PATTERNS: list[tuple[str, str]] = []
