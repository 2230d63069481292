"""attention.softmax-saturation and attention.stable-softmax: the numbers behind the verdicts."""

from __future__ import annotations

import torch

from transformer_math.claims.attention.softmax import _row_statistics


def test_softmax_saturation_numbers(attention_result):
    ev = attention_result("attention.softmax-saturation").evidence
    assert ev.details["unscaled"]["max_weight"] > 0.99
    assert ev.details["unscaled"]["jacobian_norm"] < 0.01
    assert ev.details["scaled"]["jacobian_norm"] > 0.1
    assert ev.details["jacobian_autograd_error"] < 1e-12
    wrong = attention_result("attention.softmax-saturation").falsifier_evidence
    assert wrong is not None  # attention.scale-dropped: the "scaled" arm saturates too
    assert wrong.details["scaled"]["max_weight"] > 0.99


def test_row_statistics_of_one_hot_and_uniform_rows():
    one_hot = torch.eye(4, dtype=torch.float64)
    uniform = torch.full((4, 4), 0.25, dtype=torch.float64)
    hot, flat = _row_statistics(one_hot), _row_statistics(uniform)
    assert hot["max_weight"] == 1.0 and abs(hot["jacobian_norm"]) < 1e-12
    # J = diag(p) - p p^T with p uniform over n = 4: eigenvalue 1/n on the sum-zero subspace
    assert flat["max_weight"] == 0.25 and abs(flat["jacobian_norm"] - 0.25) < 1e-12
    assert flat["entropy"] > hot["entropy"]


def test_stable_softmax_numbers(attention_result):
    res = attention_result("attention.stable-softmax")
    cases = res.evidence.details["cases"]
    assert all(c["max_abs_diff"] <= 1e-6 for c in cases.values())
    assert cases["large (1e4), float32"]["naive_nonfinite"] > 0
    assert cases["very negative (-1e4), float64"]["naive_nonfinite"] > 0
    assert res.falsifier_evidence is not None
    assert res.falsifier_evidence.measured == "inf/NaN"
