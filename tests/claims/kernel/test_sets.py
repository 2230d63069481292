"""claims.kernel.sets: what breaks under the falsifier, and the full-tier Deep Sets comparison."""

import pytest

from transformer_math.claims.kernel.sets import check_set_invariance
from transformer_math.claims.registry import CLAIMS, Context, Size, Verdict, run_claim


def test_a_position_code_breaks_every_model_not_just_one():
    ctx = Context(seed=0, size=Size.TINY)
    clean = check_set_invariance(ctx).details["errors"]
    broken = check_set_invariance(ctx, position_code=True).details["errors"]
    assert max(clean.values()) < 1e-12
    assert set(broken) == {"deepsets-sum", "deepsets-mean", "deepsets-max", "set-transformer",
                           "sab-equivariance"}
    assert min(broken.values()) > 1e-3


@pytest.mark.slow
def test_deepsets_vs_set_transformer_tiny():
    claim = CLAIMS["kernel.deepsets-vs-set-transformer"]
    result = run_claim(claim, Context(seed=0, size=Size.TINY))
    assert result.error is None
    assert result.evidence.verdict is Verdict.VERIFIED
    assert result.falsifier_caught is True
    assert result.evidence.figures
    (gap,) = result.evidence.margins
    # seeds 0-4 give gaps far above the required 0.05 (notes of the claim); with shuffled labels
    # neither model learns anything and the gap is within noise of 0
    assert gap.value >= gap.threshold + 0.05
    (f_gap,) = result.falsifier_evidence.margins
    assert abs(f_gap.value) < 0.05
    assert result.evidence.details["positive_fraction"] == pytest.approx(0.5, abs=0.03)
