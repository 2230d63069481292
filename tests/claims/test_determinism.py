"""Results are a function of the seed alone (issue 12): whatever ran before, in whatever order.

Each quick claim is run twice at size tiny, seed 0: in registry order from a fixed global RNG
state, and in reverse order with torch's, numpy's and Python's global RNGs advanced by a different
amount before every claim. The two results documents must agree field by field (only the run
time may differ), and no claim may read or advance a global RNG.
"""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Tier, all_claims
from transformer_math.report.results import to_jsonable

QUICK = [c for c in all_claims() if c.tier is Tier.QUICK]


def _diff(a, b, path: str = "") -> list[str]:
    """Paths where two JSON values differ (exact comparison, floats included)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k in ("seconds", "timing") and not path:  # wall-clock seconds, by construction
                continue
            if k not in a or k not in b:
                out.append(f"{path}.{k}: present in one run only")
            else:
                out += _diff(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: lengths {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"[:300]]


@pytest.mark.parametrize("claim", QUICK, ids=lambda c: c.id)
def test_claim_neither_reads_nor_advances_the_global_rng(claim, quick_runs):
    assert quick_runs(0)[claim.id].global_rng_untouched
    assert quick_runs(0, reverse=True)[claim.id].global_rng_untouched


@pytest.mark.parametrize("claim", QUICK, ids=lambda c: c.id)
def test_evidence_does_not_depend_on_order_or_global_rng(claim, quick_runs):
    forward = to_jsonable(quick_runs(0)[claim.id].result.to_json())
    backward = to_jsonable(quick_runs(0, reverse=True)[claim.id].result.to_json())
    differences = _diff(forward, backward)
    assert not differences, differences[:5]


def test_the_comparison_sees_a_difference():
    """The field-by-field comparison is not vacuous: a changed number or note is reported."""
    a = {"id": "x", "seconds": 1.0, "measured": [1.0, {"k": 2.0}], "notes": ["n"]}
    b = {"id": "x", "seconds": 9.0, "measured": [1.0, {"k": 2.0000001}], "notes": ["n"]}
    assert _diff(a, a | {"seconds": 3.0}) == []
    assert _diff(a | {"timing": {"check_s": 1.0}}, a | {"timing": {"check_s": 2.0}}) == []
    assert _diff(a, b) == [".measured[1].k: 2.0 != 2.0000001"]
    assert _diff(a, a | {"notes": ["m"]}) == [".notes[0]: 'n' != 'm'"]
