import pytest

from transformer_math.claims.registry import (
    Context,
    Size,
    Verdict,
    all_hold,
    get_claim,
    run_claim,
)

QUICK = [
    "kernel.nadaraya-watson",
    "kernel.temperature-bandwidth",
    "kernel.gaussian-equivalence",
    "kernel.linear-attention-rnn",
    "kernel.random-features",
    "kernel.set-invariance",
    "longcontext.critical-scaling",
    "spectrum.qk-localization",
    "memory.outer-product-crosstalk",
]
REFUTED = {"longcontext.critical-scaling", "spectrum.qk-localization"}


@pytest.mark.parametrize("claim_id", QUICK)
def test_quick_claim_and_falsifier(claim_id):
    result = run_claim(get_claim(claim_id), Context(seed=0, size=Size.TINY))
    assert result.error is None
    expected = Verdict.REFUTED if claim_id in REFUTED else Verdict.VERIFIED
    assert result.evidence.verdict is expected
    assert result.falsifier_caught is True
    # the verdicts rest on margins: every one holds for the claim, some fail for the falsifier
    assert result.evidence.margins and all_hold(result.evidence.margins)
    f = result.falsifier_evidence
    assert f is not None and f.margins and not all_hold(f.margins)
    assert [m.name for m in f.margins] == [m.name for m in result.evidence.margins]


@pytest.mark.slow
def test_deepsets_vs_set_transformer_tiny():
    c = get_claim("kernel.deepsets-vs-set-transformer")
    result = run_claim(c, Context(seed=0, size=Size.TINY))
    assert result.error is None
    assert result.evidence.verdict is not Verdict.FAILED
    assert result.falsifier_caught is True
    assert result.evidence.figures
    (gap,) = result.evidence.margins
    # seeds 0-4 give gaps far above the required 0.05 (notes of the claim); with shuffled labels
    # neither model learns anything and the gap is within noise of 0
    assert gap.value >= gap.threshold + 0.05
    (f_gap,) = result.falsifier_evidence.margins
    assert abs(f_gap.value) < 0.05
    assert result.evidence.details["positive_fraction"] == pytest.approx(0.5, abs=0.03)
