import math

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.linear_attention import (
    draw_random_projection,
    linear_attention,
    linear_attention_parallel,
    linear_attention_recurrent,
    positive_random_features,
)
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.hooks import run_with_cache

F64 = torch.float64


def _qkv(t=13, s=13, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 2, t, 8, generator=g, dtype=F64)
    k = torch.randn(2, 2, s, 8, generator=g, dtype=F64)
    v = torch.randn(2, 2, s, 3, generator=g, dtype=F64)
    return q, k, v, g


@pytest.mark.parametrize("fm", ["elu", "relu", "favor"])
@pytest.mark.parametrize("s", [13, 17])
def test_parallel_equals_recurrent_and_chunked(fm, s):
    q, k, v, g = _qkv(s=s)
    proj = draw_random_projection(8, 16, generator=g, dtype=F64) if fm == "favor" else None
    par = linear_attention_parallel(q, k, v, feature_map=fm, causal=True, projection=proj).output
    rec = linear_attention_recurrent(q, k, v, feature_map=fm, projection=proj)
    chunk = linear_attention(q, k, v, feature_map=fm, causal=True, projection=proj, chunk_size=4)
    assert torch.allclose(par, rec, atol=1e-12)
    assert torch.allclose(par, chunk, atol=1e-12)
    full = linear_attention_parallel(q, k, v, feature_map=fm, projection=proj).output
    fast = linear_attention(q, k, v, feature_map=fm, projection=proj)
    assert torch.allclose(full, fast, atol=1e-12)


def test_read_before_write_bug_is_off_by_one():
    """Planted linear-attention.read-before-write: the recurrence reads before adding (k_i, v_i),
    so position 0 sees no key (output 0) and position i sees keys < i; the correct recurrence
    equals the parallel form (token i sees itself)."""
    q, k, v, _ = _qkv()
    par = linear_attention_parallel(q, k, v, causal=True).output
    good = linear_attention_recurrent(q, k, v)
    assert torch.allclose(good, par, atol=1e-12)
    with plant("linear-attention.read-before-write"):
        bad = linear_attention_recurrent(q, k, v)
    assert (good - bad).abs().max() > 1e-3
    assert bad[:, :, 0].abs().max() == 0.0  # empty state: the project's zero for no key
    # position i of the bug = the parallel form over the keys before i
    strict = linear_attention_parallel(q[:, :, 5:6], k[:, :, :5], v[:, :, :5]).output
    assert torch.allclose(bad[:, :, 5:6], strict, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_no_normaliser_bug_drops_the_denominator(causal):
    """Planted linear-attention.no-normaliser: phi(q)^T S without / phi(q)^T z. With all values
    equal to 1 the correct output is exactly 1 (weights sum to one); the bug returns the kernel
    row sums phi(q)^T z instead."""
    q, k, _, _ = _qkv(s=17)
    ones = torch.ones(2, 2, 17, 1, dtype=F64)
    good = linear_attention(q, k, ones, causal=causal, chunk_size=4)
    assert torch.allclose(good, torch.ones_like(good), atol=1e-12)
    with plant("linear-attention.no-normaliser"):
        bad = linear_attention(q, k, ones, causal=causal, chunk_size=4)
    phi_q, phi_k = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
    raw = phi_q @ phi_k.transpose(-2, -1)
    if causal:
        raw = raw.tril(diagonal=17 - 13)  # bottom-right alignment: queries are the last 13
    assert torch.allclose(bad[..., 0], raw.sum(-1), rtol=1e-12)
    assert (bad - good).abs().max() > 1.0


def test_random_features_unbiased():
    g = torch.Generator().manual_seed(1)
    q = torch.randn(4, 8, generator=g, dtype=F64) * 0.3
    k = torch.randn(4, 8, generator=g, dtype=F64) * 0.3
    exact = torch.exp((q * k).sum(-1))
    ests = []
    for _ in range(300):
        w = draw_random_projection(8, 32, generator=g, orthogonal=False, dtype=F64)
        ests.append((positive_random_features(q, w) * positive_random_features(k, w)).sum(-1))
    ests = torch.stack(ests)
    se = ests.std(dim=0) / math.sqrt(len(ests))
    assert ((ests.mean(0) - exact).abs() <= 4 * se).all()


def test_favor_without_norm_correction_is_biased_by_the_norm_factor():
    """Planted linear-attention.favor-no-norm-correction: phi(x) = exp(w^T x)/sqrt(m) estimates
    exp(q.k) exp((|q|^2 + |k|^2)/2), not exp(q.k); the correct features are exactly the planted
    ones times exp(-|x|^2/2)."""
    g = torch.Generator().manual_seed(2)
    q = torch.randn(4, 8, generator=g, dtype=F64) * 0.3
    k = torch.randn(4, 8, generator=g, dtype=F64) * 0.3
    w = draw_random_projection(8, 64, generator=g, orthogonal=False, dtype=F64)
    good = positive_random_features(q, w)
    with plant("linear-attention.favor-no-norm-correction"):
        bad = positive_random_features(q, w)
        bad_k = positive_random_features(k, w)
    factor = torch.exp(-0.5 * (q * q).sum(-1, keepdim=True))
    assert torch.allclose(good, bad * factor, rtol=1e-12)
    # the bias in expectation: mean over many redraws of the planted estimate / exp(q.k)
    ests = []
    for _ in range(300):
        w = draw_random_projection(8, 32, generator=g, orthogonal=False, dtype=F64)
        with plant("linear-attention.favor-no-norm-correction"):
            ests.append((positive_random_features(q, w) * positive_random_features(k, w)).sum(-1))
    ratio = torch.stack(ests).mean(0) / torch.exp((q * k).sum(-1))
    expected = torch.exp(0.5 * ((q * q).sum(-1) + (k * k).sum(-1)))
    assert torch.allclose(ratio, expected, rtol=0.05)
    assert bad_k.shape == bad.shape


def test_orthogonal_projection_rows_orthogonal_in_blocks():
    w = draw_random_projection(8, 16, generator=torch.Generator().manual_seed(0), dtype=F64)
    block = w[:8]
    gram = block @ block.T
    off_diagonal = gram - torch.diag(torch.diagonal(gram))
    assert off_diagonal.abs().max() < 1e-10


def test_favor_approaches_softmax_with_many_features():
    q, k, v, g = _qkv()
    q, k = q * 0.3, k * 0.3
    proj = draw_random_projection(8, 4096, generator=g, dtype=F64)
    approx = linear_attention(q, k, v, feature_map="favor", projection=proj)
    exact = scaled_dot_product_attention(q, k, v).output
    assert (approx - exact).abs().max() < 0.05


def test_mha_linear_backend_matches_functional_and_key_padding():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2, backend="linear")
    x = torch.randn(2, 9, 16)
    out, cache = run_with_cache(mha, x, names=["hook_q", "hook_k", "hook_v"], is_causal=True)
    ref = linear_attention(cache["hook_q"], cache["hook_k"], cache["hook_v"], causal=True)
    merged = ref.transpose(1, 2).reshape(2, 9, 16)
    assert torch.allclose(out, mha.out_proj(merged), atol=1e-5)
    pad = torch.zeros(2, 9, dtype=torch.bool)
    pad[:, -3:] = True
    a = mha(x, key_padding_mask=pad)
    b = mha(x[:, :6])
    assert torch.allclose(a[:, :6], b, atol=1e-5)
    # listening to the pattern (the linear backend's implied weights) leaves the output as is
    with_weights, cache = run_with_cache(mha, x, names=["hook_pattern"], is_causal=True)
    assert torch.allclose(with_weights, out, atol=1e-5)
    weights = cache["hook_pattern"]
    assert weights.shape == (2, 2, 9, 9)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 2, 9), atol=1e-5)
    assert torch.all(weights.triu(1) == 0)  # causal


def test_bad_inputs_raise():
    q, k, v, _ = _qkv()
    with pytest.raises(ValueError, match="feature_map"):
        linear_attention(q, k, v, feature_map="cosine")
    with pytest.raises(ValueError, match="projection"):
        linear_attention(q, k, v, feature_map="favor")
    with pytest.raises(ValueError, match="chunk_size"):
        linear_attention(q, k, v, causal=True, chunk_size=0)
    mha = MultiHeadAttention(16, 2, backend="linear")
    x = torch.randn(1, 4, 16)
    with pytest.raises(ValueError, match="key-padding"):
        mha(x, attn_mask=torch.randn(4, 4))
