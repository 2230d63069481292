"""computation.parity at tiny size (one seed): verified, per-seed values, and its falsifier (no
query can attend to the previous token) caught."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim


@pytest.mark.slow
def test_parity_tiny_is_verified_and_its_falsifier_caught():
    claim = get_claim("computation.parity")
    res = run_claim(claim, Context(seed=0, size=Size.TINY, seeds=1))
    assert res.evidence.verdict is Verdict.VERIFIED, res.evidence.measured
    assert res.evidence.per_seed["seeds"] == [0]
    assert claim.falsifier.bug in res.reached
    assert res.falsifier_caught is True, res.falsifier_evidence.measured
    assert res.evidence.figures
