"""Issue 18 (SEED_AUDIT part A, 000 §8.3.7 and 004): the measured refutations of the
architecture claims and the cited corrections, both directions of each check."""

from __future__ import annotations

import math

import pytest

from transformer_math.bugs import plant
from transformer_math.claims.registry import Context, Size, Verdict, get_claim
from transformer_math.theory.kaplan_joint_law import KaplanJointLaw, product_form_fit

CTX = Context(seed=0, size=Size.TINY, seeds=1)


def test_kaplan_joint_law_limits_and_mixed_derivative() -> None:
    law = KaplanJointLaw()
    for n in (1e6, 1e9):
        assert math.isclose(law.loss(n, 1e40), law.loss_params(n), rel_tol=1e-12)
    for d in (1e8, 1e11):
        assert math.isclose(law.loss(1e40, d), law.loss_tokens(d), rel_tol=1e-12)
    # the mixed log-derivative peaks at -alpha_N / 4 where the two bracket terms are equal
    d_equal = law.d_c / law.model_term(1e8)
    assert math.isclose(law.cross_log_derivative(1e8, d_equal), -law.alpha_n / 4, rel_tol=1e-12)
    with pytest.raises(ValueError):
        KaplanJointLaw(alpha_n=0.0)
    with pytest.raises(ValueError):
        law.loss(0.0, 1e9)


def test_product_fit_recovers_an_exact_product_and_misses_the_joint_law() -> None:
    ns = [10.0 ** (6 + i) for i in range(4) for _ in range(4)]
    ds = [10.0 ** (8 + j) for _ in range(4) for j in range(4)]
    exact = [3.0 * n ** -0.05 * d ** -0.03 for n, d in zip(ns, ds, strict=True)]
    c, a, b, err = product_form_fit(ns, ds, exact)
    assert math.isclose(c, 3.0, rel_tol=1e-9) and math.isclose(a, 0.05, rel_tol=1e-9)
    assert math.isclose(b, 0.03, rel_tol=1e-9) and err < 1e-12
    law = KaplanJointLaw()
    *_, err_joint = product_form_fit(ns, ds, [law.loss(n, d) for n, d in zip(ns, ds, strict=True)])
    assert err_joint > 0.05


def test_kaplan_bracket_bug_breaks_the_limit() -> None:
    law = KaplanJointLaw()
    with plant("scaling.kaplan-bracket-exponent"):
        assert abs(law.loss(1e8, 1e40) / law.loss_params(1e8) - 1) > 0.1


@pytest.mark.parametrize("claim_id", ["architecture.kaplan-joint-law",
                                      "architecture.inference-aware-sizing"])
def test_new_claims_refute_and_their_bug_fails(claim_id: str) -> None:
    c = get_claim(claim_id)
    ev = c.check(CTX)
    assert ev.verdict is Verdict.REFUTED
    assert all(m.holds for m in ev.margins)
    assert ev.seed_margins and not all(m.holds for m in ev.seed_margins)
    assert c.statement_zh and c.refutes
    assert c.falsifier is not None
    with plant(c.falsifier.bug):
        assert c.check(CTX).verdict is Verdict.FAILED


def test_layernorm_jacobian_is_one_over_sigma() -> None:
    c = get_claim("architecture.layernorm-eps-jacobian")
    ev = c.check(CTX)
    assert ev.verdict is Verdict.VERIFIED and not c.refutes  # issue 31: strawmen dropped
    jac0 = ev.measured["jacobian_eps0"]
    assert jac0[0] == pytest.approx(1.0) and jac0[-1] == pytest.approx(1e4, rel=1e-6)
    assert max(ev.measured["jacobian_eps1e-5"]) < 1 / math.sqrt(1e-5) * (1 + 1e-9)
    assert ev.measured["min_norm_over_sqrt_d"] < 1.0
    assert ev.measured["jacobian_rank_eps0"] == 16 - 2  # 000:1108: two fewer degrees of freedom
    with plant(c.falsifier.bug):
        assert c.check(CTX).verdict is Verdict.FAILED


def test_chinchilla_one_record_per_error() -> None:
    """Issue 31: the C = 1e21 error is one record (1148, also 1150 and 1154); 1152 is the
    inference-aware model's (kind model); 1146 / 1708 are not booked."""
    c = get_claim("architecture.chinchilla")
    assert c.version == 4 and c.statement_zh and c.kind == "code-audit"
    assert [(r.line, {line for _, line in r.also}) for r in c.refutes] == [(1148, {1150, 1154})]
    m = get_claim("architecture.inference-aware-sizing")
    assert m.kind == "model" and [r.line for r in m.refutes] == [1152]
    assert any(r.line == 1146 for r in m.corrections)  # OpenVLA D/N ~ 140: cited
    booked = {line for x in (c, m) for r in x.refutes for _, line in r.lines}
    assert not booked & {1146, 1708}


def test_tiled_attention_is_not_bitwise_equal() -> None:
    c = get_claim("architecture.tiled-attention-exact")
    assert c.version == 3 and any(r.line == 1170 for r in c.refutes)


def test_cited_corrections_on_flash_io_and_pre_vs_post_norm() -> None:
    flash = get_claim("architecture.flash-io")
    assert any(r.seed == "000" and r.line == 1164 for r in flash.corrections)
    norms = get_claim("architecture.pre-vs-post-norm")
    assert {(r.seed, r.line) for r in norms.corrections} >= {("004", 375), ("004", 1079)}
    assert any("Zhu" in r.correct for r in norms.corrections)
