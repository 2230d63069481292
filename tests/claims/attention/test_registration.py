"""The attention topic package: every claim of the catalog is registered, in the module of its
theme, with a falsifier that fails through one of the claim's own margins."""

from __future__ import annotations

import pytest

from transformer_math.claims.registry import Falsifier, Tier, Verdict, all_claims, get_claim

MODULES = {
    "attention.sqrt-dk-variance": "scaling",
    "attention.hand-example": "scaling",
    "attention.softmax-saturation": "softmax",
    "attention.stable-softmax": "softmax",
    "attention.row-stochastic": "masking",
    "attention.permutation-equivariance": "masking",
    "attention.causal-mask": "masking",
    "attention.kv-cache-causal-alignment": "masking",
    "attention.fully-masked-rows": "masking",
    "attention.gqa-grouping": "grouped",
    "attention.asymmetry": "geometry",
    "attention.low-rank-bottleneck": "geometry",
    "attention.not-globally-lipschitz": "lipschitz",
    "attention.multihead-param-count": "complexity",
    "attention.complexity-table": "complexity",
    "attention.quadratic-cost": "quadratic_cost",
    "attention.heads-sweep": "heads",
    "attention.variance-snippet": "scaling",
    "attention.dk-scale-uniform": "scaling",
}
FULL = {"attention.quadratic-cost", "attention.heads-sweep"}
QUICK = sorted(k for k in MODULES if k not in FULL)


def test_every_attention_claim_is_registered_in_its_module():
    registered = {c.id: c for c in all_claims() if c.topic == "attention"}
    assert set(registered) == set(MODULES)
    for claim_id, module in MODULES.items():
        c = registered[claim_id]
        assert c.check.__module__ == f"transformer_math.claims.attention.{module}"
        assert isinstance(c.falsifier, Falsifier)  # a planted bug, never a keyword variant
        assert c.expected is not None and c.seed_refs
        assert c.tier is (Tier.FULL if claim_id in FULL else Tier.QUICK)


#: issue 31: attention.row-stochastic (000:221 misread) and attention.complexity-table (004:67, a
#: big-O read pointwise) verify the seed now
REFUTED = {"attention.multihead-param-count", "attention.not-globally-lipschitz",
           "attention.fully-masked-rows"}


def test_the_refuting_claims_refute_the_seed_and_the_others_verify(attention_result):
    for claim_id in QUICK:
        expected = Verdict.REFUTED if claim_id in REFUTED else Verdict.VERIFIED
        assert get_claim(claim_id).expected is expected
        assert attention_result(claim_id).evidence.verdict is expected


@pytest.mark.parametrize("claim_id", QUICK)
def test_falsifier_fails_through_one_of_the_claims_margins(claim_id, attention_result):
    """Issue 12: the pass conditions are numbers, all hold for the claim, and the falsifier
    fails through one of them (the same margin names in both runs)."""
    res = attention_result(claim_id)
    margins = res.evidence.margins
    assert margins and all(m.holds for m in margins), [m for m in margins if not m.holds]
    wrong = res.falsifier_evidence
    assert wrong is not None and any(not m.holds for m in wrong.margins)
    assert [m.name for m in wrong.margins] == [m.name for m in margins]
    assert get_claim(claim_id).falsifier is not None
