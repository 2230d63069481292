"""attention.not-globally-lipschitz: growth exponents of the Jacobian norm, and Kim's path."""

from __future__ import annotations

import pytest
import torch

from transformer_math.claims.attention.lipschitz import _kim_path


def test_not_globally_lipschitz_numbers(attention_result):
    res = attention_result("attention.not-globally-lipschitz")
    exps = res.evidence.details["exponents"]
    assert exps["dot-product"] == pytest.approx(2.0, abs=0.25)
    assert exps["L2 (tied W_K = W_Q)"] <= 0.25
    assert exps["dot-product on LayerNorm(X)"] == pytest.approx(-1.0, abs=0.1)
    wrong = res.falsifier_evidence
    assert wrong is not None
    # attention.l2-key-norm-dropped: without ||k_j||^2 the L2 logits are 2 q.k, which grows
    assert wrong.details["exponents"]["L2 (tied W_K = W_Q)"] == pytest.approx(2.0, abs=0.25)
    assert wrong.details["exponents"]["dot-product"] == pytest.approx(exps["dot-product"])


def test_kim_path_puts_token_zero_in_the_null_space_of_w_q():
    g = torch.Generator().manual_seed(0)
    w_q = torch.randn(8, 4, generator=g, dtype=torch.float64)
    w_k = torch.randn(8, 4, generator=g, dtype=torch.float64)
    x0 = _kim_path(torch.randn(6, 8, generator=g, dtype=torch.float64), w_q, w_k)
    assert (x0[0] @ w_q).abs().max() < 1e-12  # its logits do not grow along c X0
    key_norms = torch.linalg.vector_norm(x0 @ w_k, dim=-1)
    torch.testing.assert_close(key_norms, torch.ones(6, dtype=torch.float64))
