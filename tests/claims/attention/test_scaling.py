"""attention.sqrt-dk-variance and attention.hand-example: the numbers with an expected value."""

from __future__ import annotations

import math

import pytest

from transformer_math.claims.attention.scaling import _hand_example_exact, _variance_rel_se


def test_sqrt_dk_variance_numbers(attention_result):
    res = attention_result("attention.sqrt-dk-variance")
    ev = res.evidence
    unscaled, scaled = ev.details["var_unscaled"], ev.details["var_scaled"]
    for d_k, v_raw, v_scaled in zip((16, 64, 512), unscaled, scaled, strict=True):
        assert v_raw == pytest.approx(d_k, rel=0.15)
        assert v_scaled == pytest.approx(1.0, rel=0.15)
    general = ev.details["general_b"]
    assert general["var_with_standard_scale"] == pytest.approx(2.0, rel=0.15)
    assert general["var_with_corrected_scale"] == pytest.approx(1.0, rel=0.15)
    wrong = res.falsifier_evidence
    assert wrong is not None
    assert wrong.details["var_scaled"][2] == pytest.approx(1.0 / 512, rel=0.15)
    assert ev.figures and ev.figures[0].logx and ev.figures[0].logy


def test_variance_standard_error_formula():
    # Gaussian limit (d_k -> infinity): sqrt(2 / (N - 1)); d_k = 1 adds the excess kurtosis 6.
    assert _variance_rel_se(10**9, 101) == pytest.approx(math.sqrt(2 / 100), rel=1e-6)
    assert _variance_rel_se(1, 101) == pytest.approx(math.sqrt(2 / 100 + 6 / 101))
    assert _variance_rel_se(64, 4000) < _variance_rel_se(16, 4000) < _variance_rel_se(16, 400)


def test_hand_example_numbers(attention_result):
    res = attention_result("attention.hand-example")
    ev = res.evidence
    assert [round(w, 3) for w in ev.details["weights"]] == [0.401, 0.198, 0.401]
    assert ev.details["output"][0] == pytest.approx(6.01, abs=0.01)
    assert ev.details["output"][1] == pytest.approx(3.98, abs=0.01)
    e = math.exp(1 / math.sqrt(2))
    assert ev.details["weights"][1] == pytest.approx(1 / (2 * e + 1), abs=1e-12)
    wrong = res.falsifier_evidence  # attention.scale-dropped: weights (0.422, 0.155, 0.422)
    assert wrong is not None
    assert [round(w, 3) for w in wrong.details["weights"]] == [0.422, 0.155, 0.422]


def test_hand_example_closed_form_is_a_convex_combination():
    weights, output = _hand_example_exact()
    assert sum(weights) == pytest.approx(1.0, abs=1e-15)
    assert output[0] == pytest.approx(6.0167, abs=1e-4) and output[1] == pytest.approx(3.9833,
                                                                                      abs=1e-4)
