"""computation.parity at tiny size (one seed): inconclusive (the direct arm's window does not
cover a training string), per-seed values, 2L tested, and its falsifier (no query can attend to
the previous token) caught."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Verdict, get_claim


@pytest.mark.slow
def test_parity_tiny_is_inconclusive_and_its_falsifier_caught(full_runs):
    claim = get_claim("computation.parity")
    res = full_runs("computation.parity")
    assert res.evidence.verdict is Verdict.INCONCLUSIVE, res.evidence.measured
    assert all(m.holds for m in res.evidence.margins)
    assert res.evidence.decisive and not all(m.holds for m in res.evidence.decisive)
    assert res.evidence.per_seed["seeds"] == [0]
    assert claim.falsifier.bug in res.reached
    assert res.falsifier_caught is True, res.falsifier_evidence.measured
    assert res.evidence.figures
