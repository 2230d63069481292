"""Attention is kernel regression: implementation checks moved out of the claim catalogue.

Issue 31 retired ``kernel.nadaraya-watson`` (an attention head's output is the Nadaraya-Watson
estimate with kappa(x, x') = exp((x W_Q)(x' W_K)^T / sqrt(d_k)), the definition rewritten) and
``kernel.linear-attention-kernel-regression`` (the O(n) form of linear attention is
Nadaraya-Watson with the kernel phi(q)^T phi(k), an algebraic rewrite): no seed statement is at
risk in either, so they are tests of the library. Each asserts the identity on the library code
and, with the planted bug, that the same check fails.
"""

from __future__ import annotations

import math

import torch

from transformer_math.bugs import plant
from transformer_math.functional.linear_attention import (
    FEATURE_MAPS,
    draw_random_projection,
    linear_attention,
    positive_random_features,
)
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.init import seeded
from transformer_math.nn.kernel_regression import (
    FeatureMapKernel,
    GaussianKernel,
    SoftmaxAttentionKernel,
    nadaraya_watson,
    nadaraya_watson_weights,
)

F64 = torch.float64


def _nadaraya_watson_heads(mha: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """W_O concat_h NW_h(x): every head of ``mha`` as an explicit kernel regression with labels
    y_j = x_j W_V^(h) + b_V^(h) and the kernel of head h."""
    d_k = mha.head_dim
    per_head = []
    for h in range(mha.num_heads):
        kern = SoftmaxAttentionKernel.from_attention(mha, h)
        wv = mha.v_proj.weight[h * d_k : (h + 1) * d_k]
        bv = mha.v_proj.bias[h * d_k : (h + 1) * d_k]
        per_head.append(nadaraya_watson(x, x, x @ wv.T + bv, kern))
    return mha.out_proj(torch.cat(per_head, dim=-1))


def _attention_vs_nadaraya_watson(seed: int = 0) -> float:
    g = torch.Generator().manual_seed(seed)
    d, heads, n, batch = 16, 4, 12, 3
    mha = seeded(lambda: MultiHeadAttention(d, heads, backend="reference"), g).to(F64)
    x = torch.randn(batch, n, d, generator=g, dtype=F64)
    with torch.no_grad():
        return float((mha(x) - _nadaraya_watson_heads(mha, x)).abs().max())


def test_attention_is_nadaraya_watson():
    """Former kernel.nadaraya-watson (000:446-452, 524): max |MHA - NW| <= 1e-10 in float64
    (the sides differ in summation order and the softmax's max subtraction only)."""
    assert _attention_vs_nadaraya_watson() <= 1e-10
    with plant("kernel-regression.normalise-over-queries"):
        assert _attention_vs_nadaraya_watson() > 1e-3


def _linear_attention_vs_nadaraya_watson(seed: int = 0) -> float:
    g = torch.Generator().manual_seed(seed)
    batch, heads, t, s, d, d_v, m = 2, 2, 12, 20, 8, 5, 32
    q = torch.randn(batch, heads, t, d, generator=g, dtype=F64)
    k = torch.randn(batch, heads, s, d, generator=g, dtype=F64)
    v = torch.randn(batch, heads, s, d_v, generator=g, dtype=F64)
    proj = draw_random_projection(d, m, generator=g, dtype=F64)
    root = math.sqrt(1.0 / math.sqrt(d))  # favor estimates exp(q.k / sqrt(d))
    worst = 0.0
    for fm in ("elu", "relu", "favor"):
        if fm == "favor":
            fast = linear_attention(q, k, v, feature_map=fm, causal=False, projection=proj)

            def phi(x: torch.Tensor) -> torch.Tensor:
                return positive_random_features(x * root, proj)
        else:
            fast = linear_attention(q, k, v, feature_map=fm, causal=False)
            fn = FEATURE_MAPS[fm]
            assert fn is not None
            phi = fn
        worst = max(worst, float((fast - nadaraya_watson(q, k, v, FeatureMapKernel(phi)))
                                 .abs().max()))
    return worst


def test_linear_attention_is_kernel_regression():
    """Former kernel.linear-attention-kernel-regression (000:456-462): the O(n) form
    phi(q)^T S / phi(q)^T z equals Nadaraya-Watson with phi(q)^T phi(k) to 1e-12 (float64)."""
    assert _linear_attention_vs_nadaraya_watson() <= 1e-12
    with plant("linear-attention.no-normaliser"):
        assert _linear_attention_vs_nadaraya_watson() > 1e-3


def _gaussian_weights_error(bandwidth: float = 0.7) -> float:
    g = torch.Generator().manual_seed(3)
    q = torch.randn(10, 8, generator=g, dtype=F64)
    k = torch.randn(20, 8, generator=g, dtype=F64)
    expected = torch.softmax(-torch.cdist(q, k).pow(2) / (2 * bandwidth**2), dim=-1)
    return float((nadaraya_watson_weights(q, k, GaussianKernel(bandwidth)) - expected)
                 .abs().max())


def test_gaussian_kernel_uses_the_squared_bandwidth():
    """The reference Gaussian kernel exp(-|x - x'|^2 / 2 h^2), normalised per row, against a
    softmax of the negative squared distances (the prediction side of
    kernel.gaussian-equivalence)."""
    assert _gaussian_weights_error() <= 1e-12
    with plant("kernel-regression.gaussian-bandwidth-unsquared"):
        assert _gaussian_weights_error() > 1e-3
