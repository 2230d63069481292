"""attention.row-stochastic, attention.causal-mask, attention.permutation-equivariance."""

from __future__ import annotations

import pytest
import torch

from transformer_math.claims.attention.masking import _causal_attention, _support_violation


def test_row_stochastic_numbers(attention_result):
    res = attention_result("attention.row-stochastic")
    arms = res.evidence.details["arms"]
    assert arms["full"]["max_row_sum_error"] <= 1e-6
    assert arms["causal"]["max_row_sum_error"] <= 1e-6
    assert all(n >= 1 for n in res.evidence.details["exits_certified_outside"].values())
    assert res.falsifier_evidence is not None
    assert res.falsifier_evidence.details["arms"]["causal"]["max_row_sum_error"] > 0.1


def test_support_violation_in_both_directions():
    square = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    directions = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    assert _support_violation(square, torch.tensor([[0.5, 0.5]]), directions) <= 0
    assert _support_violation(square, torch.tensor([[1.5, 0.5]]), directions) == 0.5


def test_causal_attention_masks_before_or_after_the_softmax():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 5, 4, generator=g, dtype=torch.float64) for _ in range(3))
    before, out = _causal_attention(q, k, v, "before-softmax")
    after, out_after = _causal_attention(q, k, v, "after-softmax")
    torch.testing.assert_close(before.sum(-1), torch.ones(1, 1, 5, dtype=torch.float64))
    torch.testing.assert_close(out, before @ v)
    assert (after.sum(-1)[..., :-1] < 1 - 1e-3).all()  # every row but the last lost weight
    torch.testing.assert_close(out_after, after @ v)
    with pytest.raises(ValueError, match="mask must be one of"):
        _causal_attention(q, k, v, "never")


def test_causal_mask_numbers(attention_result):
    res = attention_result("attention.causal-mask")
    assert res.evidence.details["nonzero_future_weights"] == 0
    assert max(res.evidence.details["prefix_change"].values()) <= 1e-6
    wrong = res.falsifier_evidence
    assert wrong is not None
    assert wrong.details["max_row_sum_error"] > 0.1
    assert wrong.details["prefix_change"]["reference"] > 1e-3


def test_permutation_equivariance_numbers(attention_result):
    res = attention_result("attention.permutation-equivariance")
    assert max(res.evidence.details["errors"].values()) <= 1e-12
    assert res.evidence.details["error_with_position_code"] > 1e-3
    wrong = res.falsifier_evidence
    assert wrong is not None and min(wrong.details["errors"].values()) > 1e-3
