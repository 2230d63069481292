"""attention.row-stochastic, causal-mask, permutation-equivariance, kv-cache-causal-alignment,
fully-masked-rows."""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.claims.attention.masking import (
    _alignment_errors,
    _causal_attention,
    _support_violation,
)


def test_row_stochastic_numbers(attention_result):
    res = attention_result("attention.row-stochastic")
    arms = res.evidence.details["arms"]
    assert arms["full"]["max_row_sum_error"] <= 1e-6
    assert arms["causal"]["max_row_sum_error"] <= 1e-6
    assert all(n >= 1 for n in res.evidence.details["exits_certified_outside"].values())
    assert res.falsifier_evidence is not None  # attention.softmax-wrong-axis
    assert res.falsifier_evidence.details["arms"]["full"]["max_row_sum_error"] > 0.1


def test_support_violation_in_both_directions():
    square = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    directions = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    assert _support_violation(square, torch.tensor([[0.5, 0.5]]), directions) <= 0
    assert _support_violation(square, torch.tensor([[1.5, 0.5]]), directions) == 0.5


def test_causal_attention_masks_before_the_softmax_and_the_planted_bug_after():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 5, 4, generator=g, dtype=torch.float64) for _ in range(3))
    before, out = _causal_attention(q, k, v)
    torch.testing.assert_close(before.sum(-1), torch.ones(1, 1, 5, dtype=torch.float64))
    torch.testing.assert_close(out, before @ v)
    with plant("attention.mask-after-softmax"):
        after, _ = _causal_attention(q, k, v)
    assert (after.sum(-1)[..., :-1] < 1 - 1e-3).all()  # every row but the last lost weight


def test_causal_mask_numbers(attention_result):
    res = attention_result("attention.causal-mask")
    assert res.evidence.details["nonzero_future_weights"] == 0
    assert max(res.evidence.details["prefix_change"].values()) <= 1e-6
    wrong = res.falsifier_evidence  # attention.mask-after-softmax
    assert wrong is not None
    assert wrong.details["max_row_sum_error"] > 0.1
    assert wrong.details["prefix_change"]["reference"] > 1e-3


def test_permutation_equivariance_numbers(attention_result):
    res = attention_result("attention.permutation-equivariance")
    assert max(res.evidence.details["errors"].values()) <= 1e-12
    assert res.evidence.details["error_with_position_code"] > 1e-3
    wrong = res.falsifier_evidence  # attention.implicit-causal
    assert wrong is not None and min(wrong.details["errors"].values()) > 1e-3


def test_kv_cache_alignment_numbers(attention_result):
    res = attention_result("attention.kv-cache-causal-alignment")
    assert max(res.evidence.details["errors"].values()) <= 1e-12
    assert res.evidence.details["future_weights"] == 0
    assert res.evidence.details["starved_allowed_keys"] == 0
    wrong = res.falsifier_evidence  # attention.causal-top-left
    assert wrong is not None and min(wrong.details["errors"].values()) > 1e-2
    assert wrong.details["starved_allowed_keys"] > 0 and wrong.details["future_weights"] == 0


def test_alignment_errors_count_both_directions():
    past, c = 3, 2
    good = torch.zeros(1, 1, c, past + c)
    good[..., 0, : past + 1] = 1.0 / (past + 1)
    good[..., 1, :] = 1.0 / (past + c)
    assert _alignment_errors([(past, good)]) == (0, 0)
    top_left = torch.zeros(1, 1, c, past + c)
    top_left[..., 0, 0] = 1.0
    top_left[..., 1, :2] = 0.5
    assert _alignment_errors([(past, top_left)]) == (0, 3 + 3)


def test_fully_masked_rows_numbers(attention_result):
    res = attention_result("attention.fully-masked-rows")
    assert res.evidence.details["dead_weight"] == 0.0
    assert res.evidence.details["dead_output"] == 0.0
    wrong = res.falsifier_evidence  # attention.mask-finfo-min: uniform over the masked keys
    assert wrong is not None and wrong.details["dead_weight"] >= 1 / 8
    assert wrong.details["dead_output"] > 0.1
