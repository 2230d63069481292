"""Every quick claim of the kernel topic: its expected verdict, and its falsifier's bug (planted
in the library) is reached by the clean run and caught."""

import pytest

from transformer_math.claims.registry import (
    CLAIMS,
    Context,
    Falsifier,
    Size,
    Tier,
    all_claims,
    run_claim,
)

QUICK = [c.id for c in all_claims() if c.topic == "kernel" and c.tier is Tier.QUICK]


def test_the_topic_has_its_quick_claims():
    assert set(QUICK) == {
        "kernel.gaussian-equivalence", "kernel.temperature-bandwidth",
        "kernel.linear-attention-rnn", "kernel.random-features", "kernel.set-invariance",
        "kernel.kernel-audit",
        "kernel.set-function-audit", "kernel.linear-vs-softmax-retrieval",
    }


@pytest.mark.parametrize("claim_id", QUICK)
def test_quick_claim_verdict_and_falsifier(claim_id):
    c = CLAIMS[claim_id]
    assert isinstance(c.falsifier, Falsifier)
    assert c.expected is not None and c.seed_refs
    result = run_claim(c, Context(seed=0, size=Size.TINY))
    assert result.error is None
    assert result.evidence.verdict is c.expected, result.evidence.notes
    assert result.falsifier_caught is True
    assert c.falsifier.bug in result.reached
