"""The attention claims (CLAIMS.md, section "attention") at tiny size: each holds (verified, or
refuted for the audit of the third seed's parameter table), each falsifier is caught, and the
numbers that have an exact expected value have it."""

from __future__ import annotations

import math

import pytest

from transformer_math.claims.registry import (
    ClaimResult,
    Context,
    Size,
    Tier,
    Verdict,
    all_claims,
    get_claim,
    run_claim,
)

EXPECTED = {
    "attention.sqrt-dk-variance": Verdict.VERIFIED,
    "attention.softmax-saturation": Verdict.VERIFIED,
    "attention.row-stochastic": Verdict.VERIFIED,
    "attention.permutation-equivariance": Verdict.VERIFIED,
    "attention.causal-mask": Verdict.VERIFIED,
    "attention.hand-example": Verdict.VERIFIED,
    "attention.asymmetry": Verdict.VERIFIED,
    "attention.low-rank-bottleneck": Verdict.VERIFIED,
    "attention.multihead-param-count": Verdict.REFUTED,
    "attention.not-globally-lipschitz": Verdict.VERIFIED,
    "attention.stable-softmax": Verdict.VERIFIED,
    "attention.complexity-table": Verdict.VERIFIED,
    "attention.quadratic-cost": Verdict.VERIFIED,
}
QUICK = sorted(k for k in EXPECTED if k != "attention.quadratic-cost")
TINY = Context(seed=0, size=Size.TINY)
_CACHE: dict[str, ClaimResult] = {}


def result(claim_id: str) -> ClaimResult:
    """Run each claim (and its falsifier) once per test session."""
    if claim_id not in _CACHE:
        _CACHE[claim_id] = run_claim(get_claim(claim_id), TINY)
    return _CACHE[claim_id]


def test_every_attention_claim_of_the_catalog_is_registered():
    registered = {c.id for c in all_claims() if c.topic == "attention"}
    assert registered == set(EXPECTED)
    assert get_claim("attention.quadratic-cost").tier is Tier.FULL
    assert all(get_claim(c).tier is Tier.QUICK for c in QUICK)
    assert all(get_claim(c).falsifier is not None for c in EXPECTED)


@pytest.mark.parametrize("claim_id", QUICK)
def test_quick_claim_verdict_and_falsifier(claim_id):
    res = result(claim_id)
    assert res.error is None, res.error
    assert res.evidence.verdict is EXPECTED[claim_id], (res.evidence.measured, res.evidence.notes)
    assert res.falsifier_evidence is not None
    assert res.falsifier_evidence.verdict is Verdict.FAILED
    assert res.falsifier_caught is True


@pytest.mark.parametrize("claim_id", QUICK)
def test_quick_claim_reports_margins_that_decide_its_verdict(claim_id):
    """Issue 12: the pass conditions are numbers, all hold for the claim, and the falsifier
    fails through one of them (the same margin names in both runs)."""
    res = result(claim_id)
    margins = res.evidence.margins
    assert margins and all(m.holds for m in margins), [m for m in margins if not m.holds]
    wrong = res.falsifier_evidence
    assert wrong is not None and any(not m.holds for m in wrong.margins)
    assert [m.name for m in wrong.margins] == [m.name for m in margins]


@pytest.mark.parametrize("claim_id", QUICK)
def test_quick_claim_margins_do_not_depend_on_the_seed_in_name(claim_id):
    other = get_claim(claim_id).check(Context(seed=3, size=Size.TINY))
    assert [m.name for m in other.margins] == [m.name for m in result(claim_id).evidence.margins]


@pytest.mark.parametrize("claim_id", QUICK)
def test_quick_claim_is_deterministic(claim_id):
    first = result(claim_id).evidence
    again = get_claim(claim_id).check(TINY)
    assert again.measured == first.measured
    assert again.verdict is first.verdict


def test_sqrt_dk_variance_numbers():
    ev = result("attention.sqrt-dk-variance").evidence
    unscaled, scaled = ev.details["var_unscaled"], ev.details["var_scaled"]
    for d_k, v_raw, v_scaled in zip((16, 64, 512), unscaled, scaled, strict=True):
        assert v_raw == pytest.approx(d_k, rel=0.15)
        assert v_scaled == pytest.approx(1.0, rel=0.15)
    general = ev.details["general_b"]
    assert general["var_with_standard_scale"] == pytest.approx(2.0, rel=0.15)
    assert general["var_with_corrected_scale"] == pytest.approx(1.0, rel=0.15)
    wrong = result("attention.sqrt-dk-variance").falsifier_evidence
    assert wrong is not None
    assert wrong.details["var_scaled"][2] == pytest.approx(1.0 / 512, rel=0.15)
    assert ev.figures and ev.figures[0].logx and ev.figures[0].logy


def test_softmax_saturation_numbers():
    ev = result("attention.softmax-saturation").evidence
    assert ev.details["unscaled"]["max_weight"] > 0.99
    assert ev.details["unscaled"]["jacobian_norm"] < 0.01
    assert ev.details["scaled"]["jacobian_norm"] > 0.1
    assert ev.details["jacobian_autograd_error"] < 1e-12


def test_row_stochastic_numbers():
    res = result("attention.row-stochastic")
    arms = res.evidence.details["arms"]
    assert arms["full"]["max_row_sum_error"] <= 1e-6
    assert arms["causal"]["max_row_sum_error"] <= 1e-6
    assert all(n >= 1 for n in res.evidence.details["exits_certified_outside"].values())
    assert res.falsifier_evidence is not None
    assert res.falsifier_evidence.details["arms"]["causal"]["max_row_sum_error"] > 0.1


def test_causal_mask_numbers():
    res = result("attention.causal-mask")
    assert res.evidence.details["nonzero_future_weights"] == 0
    assert max(res.evidence.details["prefix_change"].values()) <= 1e-6
    wrong = res.falsifier_evidence
    assert wrong is not None
    assert wrong.details["max_row_sum_error"] > 0.1
    assert wrong.details["prefix_change"]["reference"] > 1e-3


def test_hand_example_numbers():
    ev = result("attention.hand-example").evidence
    assert [round(w, 3) for w in ev.details["weights"]] == [0.401, 0.198, 0.401]
    assert ev.details["output"][0] == pytest.approx(6.01, abs=0.01)
    assert ev.details["output"][1] == pytest.approx(3.98, abs=0.01)
    e = math.exp(1 / math.sqrt(2))
    assert ev.details["weights"][1] == pytest.approx(1 / (2 * e + 1), abs=1e-12)


def test_asymmetry_numbers():
    ev = result("attention.asymmetry").evidence
    assert ev.details["logit_asymmetry"] < 1e-12
    assert ev.details["weight_asymmetry"] > 0.05  # the least asymmetric of 8 x 2 matrices
    assert ev.details["predicted_asymmetry"] == pytest.approx(ev.details["weight_asymmetry"])
    assert ev.details["identity_error"] < 1e-9
    wrong = result("attention.asymmetry").falsifier_evidence
    assert wrong is not None and wrong.details["weight_asymmetry"] < 1e-12


def test_low_rank_bottleneck_numbers():
    ev = result("attention.low-rank-bottleneck").evidence
    assert ev.details["ranks"] == [8] * 8
    assert ev.details["rank_single_head"] == 32  # min(n, d) at tiny size (n = 32)
    scales = ev.details["recovered_scales"]
    assert all(s == pytest.approx(1 / math.sqrt(8), rel=1e-9) for s in scales)


def test_multihead_param_count_numbers():
    res = result("attention.multihead-param-count")
    assert res.evidence.measured == 1_050_624
    assert res.evidence.details["seed_total"] == 360_448
    assert res.evidence.details["without_bias"] == 1_048_576
    assert res.evidence.details["torch_multihead_attention"] == 1_050_624
    assert res.falsifier_evidence is not None
    assert res.falsifier_evidence.predicted == 360_448


def test_not_globally_lipschitz_numbers():
    res = result("attention.not-globally-lipschitz")
    exps = res.evidence.details["exponents"]
    assert exps["dot-product"] == pytest.approx(2.0, abs=0.25)
    assert exps["L2 (tied W_K)"] <= 0.25
    assert exps["dot-product on LayerNorm(X)"] == pytest.approx(-1.0, abs=0.1)
    wrong = res.falsifier_evidence
    assert wrong is not None
    assert wrong.details["exponents"]["L2 (untied W_K)"] == pytest.approx(2.0, abs=0.25)


def test_stable_softmax_numbers():
    res = result("attention.stable-softmax")
    cases = res.evidence.details["cases"]
    assert all(c["max_abs_diff"] <= 1e-6 for c in cases.values())
    assert cases["large (1e4), float32"]["naive_nonfinite"] > 0
    assert cases["very negative (-1e4), float64"]["naive_nonfinite"] > 0
    assert res.falsifier_evidence is not None
    assert res.falsifier_evidence.measured == "inf/NaN"


def test_complexity_table_numbers():
    res = result("attention.complexity-table")
    for row in res.evidence.details["settings"]:
        assert row["projections_measured"] == row["projections_predicted"]
        assert row["products_measured"] == row["products_predicted"]
        n, d, b = row["n"], row["d"], row["batch"]
        assert row["products_measured"] == b * 4 * n * n * d
        assert row["projections_measured"] == b * 8 * n * d * d
    wrong = res.falsifier_evidence
    assert wrong is not None
    for row in wrong.details["settings"]:
        assert row["products_measured"] == row["heads"] * row["products_predicted"]


@pytest.mark.slow
def test_quadratic_cost_rests_on_counted_work_and_catches_the_quadratic_order():
    """Counted work: full attention is an exact degree-2 polynomial in n, linear attention an
    exact degree-1 one; linear attention multiplied as (phi(Q) phi(K)^T) V (the falsifier) gives
    the same outputs with degree-2 work. Times are reported, not judged."""
    res = result("attention.quadratic-cost")
    assert res.error is None, res.error
    assert res.evidence.verdict is Verdict.VERIFIED
    details = res.evidence.details
    assert details["degrees"] == {"full": 2, "linear": 1}
    assert details["count_exponents"]["full"] == pytest.approx(2.0, abs=0.01)
    assert details["count_exponents"]["linear"] == pytest.approx(1.0, abs=1e-9)
    assert details["output_error"] < 1e-10
    assert set(details["timing"]["exponents"]) == {
        "full (thread)", "full (wall)", "linear (thread)", "linear (wall)"}
    assert all(m.holds for m in res.evidence.margins)
    assert not any("exponent" in m.name and "time" in m.name for m in res.evidence.margins)
    wrong = res.falsifier_evidence
    assert res.falsifier_caught is True and wrong is not None
    assert wrong.details["degrees"] == {"full": 2, "linear": 2}
    assert wrong.details["count_exponents"]["linear"] > 1.9
    assert wrong.details["output_error"] < 1e-10  # same outputs: only the work differs
    failing = {m.name for m in wrong.margins if not m.holds}
    assert failing == {"linear attention: degree of the counted-work polynomial",
                       "linear attention: log-log exponent of counted work"}
    # The verdict does not depend on time: the counts repeat exactly, the times need not.
    again = get_claim("attention.quadratic-cost").check(TINY)
    assert again.details["counted_work"] == details["counted_work"]
    assert again.margins == res.evidence.margins
