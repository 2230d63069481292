"""nn.kernel_regression: the Nadaraya-Watson regressor and its kernels (000 §8.3.2 theory A)."""

import math

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.hooks import run_with_cache
from transformer_math.nn.init import seeded
from transformer_math.nn.kernel_regression import (
    EpanechnikovKernel,
    FeatureMapKernel,
    GaussianKernel,
    LinearKernel,
    NadarayaWatson,
    SoftmaxAttentionKernel,
    nadaraya_watson,
    nadaraya_watson_weights,
)

F64 = torch.float64


@pytest.mark.parametrize("num_kv_heads", [2, 1])
def test_head_output_is_nadaraya_watson_of_its_kernel(num_kv_heads):
    mha = seeded(lambda: MultiHeadAttention(8, 2, num_kv_heads=num_kv_heads, backend="reference"),
                 0).to(F64)
    x = torch.randn(1, 5, 8, generator=torch.Generator().manual_seed(1), dtype=F64)
    _, cache = run_with_cache(mha, x, names=["hook_v", "hook_z", "hook_pattern"])
    for head in range(2):
        kern = SoftmaxAttentionKernel.from_attention(mha, head)
        g = head // (2 // num_kv_heads)
        nw = nadaraya_watson(x[0], x[0], cache["hook_v"][0, g], kern)
        assert torch.allclose(cache["hook_z"][0, head], nw, atol=1e-13)
        weights = nadaraya_watson_weights(x[0], x[0], kern)
        assert torch.allclose(cache["hook_pattern"][0, head], weights, atol=1e-13)
    with pytest.raises(ValueError, match="head"):
        SoftmaxAttentionKernel.from_attention(mha, 2)


def test_nadaraya_watson_regressor_and_epanechnikov_support():
    x = torch.linspace(0, 1, 50, dtype=F64).unsqueeze(1)
    y = torch.sin(2 * math.pi * x[:, 0])
    reg = NadarayaWatson(GaussianKernel(0.05)).fit(x, y)
    pred = reg(torch.tensor([[0.25]], dtype=F64))
    assert abs(float(pred) - 1.0) < 0.05
    far = NadarayaWatson(EpanechnikovKernel(0.1)).fit(x, y)(torch.tensor([[5.0]], dtype=F64))
    assert float(far) == 0.0  # no point within the bandwidth: zero, not NaN
    with pytest.raises(ValueError, match="fitted"):
        NadarayaWatson(GaussianKernel())(x)
    with pytest.raises(ValueError, match="bandwidth"):
        GaussianKernel(-1.0)


def test_linear_kernel_weights_are_signed_and_sum_to_one():
    g = torch.Generator().manual_seed(2)
    xq, xd = torch.randn(3, 4, generator=g, dtype=F64), torch.randn(6, 4, generator=g, dtype=F64)
    w = nadaraya_watson_weights(xq, xd, LinearKernel(1.0))
    assert torch.allclose(w.sum(-1), torch.ones(3, dtype=F64))
    assert (w < 0).any()  # 1 + x.x' can be negative: not a probability


def test_normalise_over_queries_bug_normalises_columns():
    """Planted kernel-regression.normalise-over-queries: weights sum to one over the queries
    (columns) instead of over the data points (rows); the correct weights are row-stochastic."""
    g = torch.Generator().manual_seed(3)
    xq, xd = torch.randn(5, 3, generator=g, dtype=F64), torch.randn(7, 3, generator=g, dtype=F64)
    y = torch.randn(7, 2, generator=g, dtype=F64)
    kern = GaussianKernel(1.0)
    good = nadaraya_watson_weights(xq, xd, kern)
    assert torch.allclose(good.sum(-1), torch.ones(5, dtype=F64), atol=1e-12)
    assert torch.allclose(nadaraya_watson(xq, xd, y, kern), good @ y, atol=1e-12)
    with plant("kernel-regression.normalise-over-queries"):
        bad = nadaraya_watson_weights(xq, xd, kern)
        bad_out = nadaraya_watson(xq, xd, y, kern)
    assert torch.allclose(bad.sum(-2), torch.ones(7, dtype=F64), atol=1e-12)
    assert not torch.allclose(bad.sum(-1), torch.ones(5, dtype=F64), atol=1e-3)
    assert torch.allclose(bad_out, bad @ y, atol=1e-12)


def test_gaussian_bandwidth_unsquared_bug():
    """Planted kernel-regression.gaussian-bandwidth-unsquared: exp(-r^2 / 2h) for h = 0.5;
    the correct kernel is exp(-r^2 / 2h^2)."""
    x, y = torch.zeros(1, 2, dtype=F64), torch.tensor([[1.0, 0.0]], dtype=F64)
    kern = GaussianKernel(0.5)
    assert float(kern(x, y)) == pytest.approx(math.exp(-1 / (2 * 0.25)), rel=1e-12)
    with plant("kernel-regression.gaussian-bandwidth-unsquared"):
        assert float(kern(x, y)) == pytest.approx(math.exp(-1 / (2 * 0.5)), rel=1e-12)


def test_feature_map_kernel_is_the_inner_product_of_features():
    g = torch.Generator().manual_seed(4)
    xq, xd = torch.randn(2, 4, 3, generator=g, dtype=F64), torch.randn(2, 6, 3, generator=g,
                                                                      dtype=F64)
    kern = FeatureMapKernel(lambda x: torch.cat([torch.ones_like(x[..., :1]), x], -1))
    assert torch.allclose(kern(xq, xd), LinearKernel(1.0)(xq, xd), atol=1e-12)
    with pytest.raises(TypeError, match="callable"):
        FeatureMapKernel(3)  # type: ignore[arg-type]
