"""computation.parity at tiny size: verified, and its copy-scratchpad falsifier caught."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim


@pytest.mark.slow
def test_parity_tiny_is_verified_and_its_falsifier_caught():
    res = run_claim(get_claim("computation.parity"), Context(seed=0, size=Size.TINY))
    assert res.evidence.verdict is Verdict.VERIFIED, res.evidence.measured
    assert res.falsifier_caught is True, res.falsifier_evidence.measured
    assert res.evidence.figures
