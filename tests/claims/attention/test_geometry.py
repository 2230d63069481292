"""attention.asymmetry and attention.low-rank-bottleneck: the numbers behind the verdicts."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.claims.attention.geometry import _recovered_scale, _relative_asymmetry


def test_asymmetry_numbers(attention_result):
    res = attention_result("attention.asymmetry")
    ev = res.evidence
    assert ev.details["logit_asymmetry"] < 1e-12
    assert ev.details["weight_asymmetry"] > 0.05  # the least asymmetric of 8 x 2 matrices
    assert ev.details["predicted_asymmetry"] == pytest.approx(ev.details["weight_asymmetry"])
    assert ev.details["identity_error"] < 1e-9
    wrong = res.falsifier_evidence  # attention.softmax-wrong-axis: columns normalised
    assert wrong is not None and wrong.details["identity_error"] > 1e-3
    assert wrong.details["logit_asymmetry"] < 1e-12  # the logits are untouched


def test_relative_asymmetry_in_both_directions():
    sym = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
    skew = torch.tensor([[0.0, 1.0], [-1.0, 0.0]])
    assert _relative_asymmetry(sym) == 0.0
    assert _relative_asymmetry(skew) == pytest.approx(2.0)  # ||2 M|| / ||M||
    assert _relative_asymmetry(torch.stack([sym, skew]), "min") == 0.0


def test_recovered_scale_reads_back_the_applied_scale():
    g = torch.Generator().manual_seed(0)
    raw = torch.randn(1, 3, 4, 5, generator=g, dtype=torch.float64)
    scales = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64).view(1, 3, 1, 1)
    weights = torch.softmax(raw * scales, dim=-1)
    torch.testing.assert_close(_recovered_scale(weights, raw), scales.flatten())


def test_low_rank_bottleneck_numbers(attention_result):
    ev = attention_result("attention.low-rank-bottleneck").evidence
    assert ev.details["ranks"] == [8] * 8
    assert ev.details["rank_single_head"] == 32  # min(n, d) at tiny size (n = 32)
    scales = ev.details["recovered_scales"]
    assert all(s == pytest.approx(1 / math.sqrt(8), rel=1e-9) for s in scales)


def test_low_rank_bottleneck_falsifier_reads_back_the_model_width_scale(attention_result):
    wrong = attention_result("attention.low-rank-bottleneck").falsifier_evidence
    assert wrong is not None  # attention.scale-by-model-width: 1/sqrt(d) = 1/8 per head
    assert all(s == pytest.approx(1 / 8, rel=1e-9) for s in wrong.details["recovered_scales"])
    assert wrong.details["ranks"] == [8] * 8  # the rank bound does not depend on the scale
