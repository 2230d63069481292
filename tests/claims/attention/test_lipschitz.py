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
    # attention.weights-detached (the reference backend the module runs): no gradient through
    # the softmax, so ||J|| is that of the value path, bounded along c X: exponent ~0
    assert abs(wrong.details["exponents"]["dot-product"]) <= 0.25
    # the L2 map does not run the reference backend: unchanged
    assert wrong.details["exponents"]["L2 (tied W_K = W_Q)"] == pytest.approx(
        exps["L2 (tied W_K = W_Q)"])


def test_l2_key_norm_dropped_is_caught_by_the_l2_margin():
    """The second planted bug of this claim, attention.l2-key-norm-dropped (functional/
    l2_attention.py): without ||k_j||^2 the tied L2 logits are 2 q.k, which grows like c^2."""
    from transformer_math.bugs import plant
    from transformer_math.claims.attention.lipschitz import check_not_globally_lipschitz
    from transformer_math.claims.registry import Context, Size, Verdict

    with plant("attention.l2-key-norm-dropped"):
        ev = check_not_globally_lipschitz(Context(seed=0, size=Size.TINY))
    assert ev.details["exponents"]["L2 (tied W_K = W_Q)"] == pytest.approx(2.0, abs=0.25)
    assert ev.verdict is Verdict.FAILED  # a pass condition fails: the bug is caught


def test_kim_path_puts_token_zero_in_the_null_space_of_w_q():
    g = torch.Generator().manual_seed(0)
    w_q = torch.randn(8, 4, generator=g, dtype=torch.float64)
    w_k = torch.randn(8, 4, generator=g, dtype=torch.float64)
    x0 = _kim_path(torch.randn(6, 8, generator=g, dtype=torch.float64), w_q, w_k)
    assert (x0[0] @ w_q).abs().max() < 1e-12  # its logits do not grow along c X0
    key_norms = torch.linalg.vector_norm(x0 @ w_k, dim=-1)
    torch.testing.assert_close(key_norms, torch.ones(6, dtype=torch.float64))
