"""MultiHeadAttention against torch.nn.MultiheadAttention, GQA/MQA, KV cache, bad input."""

from __future__ import annotations

import pytest
import torch

from transformer_math.nn.attention import KVCache, MultiHeadAttention, count_parameters

E, H = 32, 4


def _pair(bias: bool = True, backend: str = "sdpa", seed: int = 0):
    torch.manual_seed(seed)  # torch.nn.MultiheadAttention initialises from the global RNG
    ref = torch.nn.MultiheadAttention(E, H, bias=bias, batch_first=True)
    ours = MultiHeadAttention(E, H, bias=bias, backend=backend)
    ours.load_torch_multihead_attention(ref)
    return ours.eval(), ref.eval()


def _x(b=2, t=6, seed=1, dtype=torch.float32):
    return torch.randn(b, t, E, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("backend", ["sdpa", "reference"])
@pytest.mark.parametrize("bias", [True, False])
def test_equals_torch_multihead_attention_without_masks(backend, bias):
    ours, ref = _pair(bias=bias, backend=backend)
    x = _x()
    expected, _ = ref(x, x, x, need_weights=False)
    torch.testing.assert_close(ours(x).output, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backend", ["sdpa", "reference"])
def test_equals_torch_multihead_attention_with_masks(backend):
    ours, ref = _pair(backend=backend)
    x = _x(t=6)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[1, 4:] = True
    causal_forbidden = torch.ones(6, 6, dtype=torch.bool).triu(1)  # torch: True = NOT allowed
    expected, w_ref = ref(
        x, x, x, key_padding_mask=pad, attn_mask=causal_forbidden,
        need_weights=True, average_attn_weights=False,
    )
    res = ours(x, key_padding_mask=pad, is_causal=True, return_weights=True)
    torch.testing.assert_close(res.output, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(res.weights, w_ref, atol=1e-6, rtol=1e-5)
    # our boolean attn_mask uses the SDPA convention (True = allowed): the complement of torch's
    res2 = ours(x, key_padding_mask=pad, attn_mask=~causal_forbidden)
    torch.testing.assert_close(res2.output, expected, atol=1e-5, rtol=1e-5)


def test_cross_attention_equals_torch():
    ours, ref = _pair()
    x, memory = _x(t=4), _x(t=9, seed=3)
    expected, _ = ref(x, memory, memory, need_weights=False)
    torch.testing.assert_close(ours(x, memory).output, expected, atol=1e-5, rtol=1e-5)


def test_parameter_count_matches_formula():
    # 4 d^2 + 4 d for MHA with biases (d = 512, H = 8): 1,050,624
    assert count_parameters(MultiHeadAttention(512, 8)) == 4 * 512 * 512 + 4 * 512 == 1_050_624
    # GQA with 2 kv heads: q and o are d x d, k and v are d x (2 * 64)
    gqa = MultiHeadAttention(512, 8, num_kv_heads=2, bias=False)
    assert count_parameters(gqa) == 2 * 512 * 512 + 2 * 512 * 128


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
@pytest.mark.parametrize("backend", ["sdpa", "reference"])
def test_cached_decoding_equals_full_recomputation(num_kv_heads, backend):
    torch.manual_seed(0)
    mha = MultiHeadAttention(E, H, num_kv_heads=num_kv_heads, backend=backend).eval()
    x = _x(t=9)
    full = mha(x, is_causal=True).output
    cache = KVCache()
    prefix = mha(x[:, :4], is_causal=True, kv_cache=cache).output  # prefill 4 tokens
    steps = [mha(x[:, t : t + 1], is_causal=True, kv_cache=cache).output for t in range(4, 7)]
    chunk = mha(x[:, 7:9], is_causal=True, kv_cache=cache).output  # two tokens at once
    incremental = torch.cat([prefix, *steps, chunk], dim=1)
    torch.testing.assert_close(incremental, full, atol=1e-5, rtol=1e-5)
    assert cache.seq_len == 9


def test_multi_query_attention_shares_one_kv_head():
    mha = MultiHeadAttention(E, H, num_kv_heads=1)
    assert mha.k_proj.out_features == E // H and mha.v_proj.out_features == E // H
    assert mha(_x()).output.shape == (2, 6, E)


def test_scale_fn_replaces_default_scale():
    torch.manual_seed(0)
    mha = MultiHeadAttention(E, H, backend="reference", scale_fn=lambda d, n: 0.0).eval()
    res = mha(_x(), return_weights=True)
    # scale 0 makes every weight uniform over the keys
    torch.testing.assert_close(res.weights, torch.full_like(res.weights, 1 / 6))


def test_bad_construction_and_input_name_the_argument():
    with pytest.raises(ValueError, match=r"num_heads \(5\) must divide embed_dim \(32\)"):
        MultiHeadAttention(32, 5)
    with pytest.raises(ValueError, match="num_kv_heads"):
        MultiHeadAttention(32, 4, num_kv_heads=3)
    with pytest.raises(ValueError, match="backend must be one of"):
        MultiHeadAttention(32, 4, backend="fast")
    mha = MultiHeadAttention(E, H)
    with pytest.raises(ValueError, match="query must have shape"):
        mha(torch.randn(6, E))
    with pytest.raises(ValueError, match="query must have last dim 32"):
        mha(torch.randn(2, 6, 16))
    with pytest.raises(TypeError, match=r"query dtype torch\.float64"):
        mha(torch.randn(2, 6, E, dtype=torch.float64))


def test_weights_only_from_reference_when_requested():
    mha = MultiHeadAttention(E, H).eval()
    assert mha(_x()).weights is None
    w = mha(_x(), return_weights=True).weights
    assert w is not None and w.shape == (2, H, 6, 6)


def test_reset_parameters_is_reproducible_from_a_generator():
    a, b = MultiHeadAttention(E, H), MultiHeadAttention(E, H)
    a.reset_parameters(torch.Generator().manual_seed(7))
    b.reset_parameters(torch.Generator().manual_seed(7))
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    bound = 1 / E**0.5
    assert a.q_proj.weight.abs().max() <= bound and a.q_proj.weight.std() > bound / 3
