import pytest

from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim

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


@pytest.mark.slow
def test_deepsets_vs_set_transformer_tiny():
    c = get_claim("kernel.deepsets-vs-set-transformer")
    result = run_claim(c, Context(seed=0, size=Size.TINY))
    assert result.evidence.verdict is not Verdict.FAILED
    assert result.falsifier_caught is True
    assert result.evidence.figures
