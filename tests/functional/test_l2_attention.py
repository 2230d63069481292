"""functional.l2_attention: the L2 logits -||q - k||^2 scale, and the planted dropped key norm."""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.functional.l2_attention import l2_attention_logits, l2_self_attention

F64 = torch.float64


def test_l2_logits_are_minus_squared_distances_and_the_planted_bug_is_a_dot_product():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 4, 5, generator=g, dtype=F64)
    k = torch.randn(2, 3, 6, 5, generator=g, dtype=F64)
    good = l2_attention_logits(q, k, 0.5)
    torch.testing.assert_close(good, -torch.cdist(q, k).pow(2) * 0.5)
    with plant("attention.l2-key-norm-dropped"):
        bad = l2_attention_logits(q, k, 0.5)
    q_sq = q.pow(2).sum(-1, keepdim=True)
    torch.testing.assert_close(bad, (2 * q @ k.transpose(-2, -1) - q_sq) * 0.5)
    # the dropped term is not constant along a row: the softmax changes
    assert (torch.softmax(bad, -1) - torch.softmax(good, -1)).abs().max() > 1e-3


def test_l2_self_attention_weights_are_row_stochastic():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 5, 8, generator=g, dtype=F64)
    w_q, w_v = (torch.randn(8, 8, generator=g, dtype=F64) for _ in range(2))
    out = l2_self_attention(x, w_q, w_v, num_heads=2, return_weights=True)
    assert out.weights is not None
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(1, 2, 5, dtype=F64))
