"""What a run left out: the registered claims it did not run, and why (issue 38.3).

A quick run (``tmath verify``, tier ``quick``) skips the claims of tier ``full``, which train
something (``claims.registry.Tier``); ``-k PATTERN`` skips the claims it does not match. A report
that does not say so reads as the whole catalogue. :func:`left_out` counts the claims of
``everything`` (the catalogue) that are not in ``ran``, by reason; ``tmath verify`` stores it in
the results document's ``summary["left_out"]``, where the HTML report and the terminal summary
read it, so that ``tmath report`` of a saved run says the same.

The record: ``{"total": n, "by_tier": {"full": 21}, "by_pattern": m, "pattern": "...",
"tier": "quick", "ids": [...]}``; ``total`` is 0 when the run held every claim.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformer_math.claims.registry import Claim

#: the tier whose claims train something (``claims.registry.Tier.FULL``)
TRAINING_TIER = "full"


def left_out(everything: Iterable[Claim], ran: Iterable[Claim], *, tier: str,
             pattern: str | None = None) -> dict[str, Any]:
    """The claims of ``everything`` not in ``ran``: those of a tier the run's ``tier`` excludes
    (``quick`` runs quick claims only), and those ``pattern`` did not match."""
    from transformer_math.claims.registry import Tier

    ran_ids = {c.id for c in ran}
    skipped = sorted((c for c in everything if c.id not in ran_ids), key=lambda c: c.id)
    by_tier: dict[str, int] = {}
    by_pattern = 0
    for c in skipped:
        if Tier(tier) is Tier.QUICK and c.tier is not Tier.QUICK:
            by_tier[c.tier.value] = by_tier.get(c.tier.value, 0) + 1
        else:
            by_pattern += 1
    return {"total": len(skipped), "tier": str(tier), "by_tier": by_tier,
            "by_pattern": by_pattern, "pattern": pattern, "ids": [c.id for c in skipped]}


def left_out_text(record: Mapping[str, Any] | None, ui: Any) -> str:
    """The one line a reader sees (empty when nothing was left out or ``record`` is absent);
    ``ui(key, **fields)`` gives the words in the page's language (:func:`i18n.ui`)."""
    if not isinstance(record, Mapping) or not record.get("total"):
        return ""
    parts = []
    by_tier = record.get("by_tier")
    for tier, n in (by_tier.items() if isinstance(by_tier, Mapping) else ()):
        key = "left_out.training" if tier == TRAINING_TIER else "left_out.tier"
        parts.append(ui(key, n=n, tier=tier))
    if record.get("by_pattern"):
        parts.append(ui("left_out.pattern", n=record["by_pattern"],
                        pattern=record.get("pattern") or ""))
    return ui("left_out.line", n=record["total"], parts="; ".join(parts))
