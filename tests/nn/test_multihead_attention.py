"""MultiHeadAttention against torch.nn.MultiheadAttention, GQA/MQA, KV cache, bad input, and its
attention hook points (weights are read at ``hook_pattern``, never returned)."""

from __future__ import annotations

import pytest
import torch

from transformer_math.bugs import plant
from transformer_math.functional import scaled_dot_product_attention
from transformer_math.nn.attention import KVCache, MultiHeadAttention, count_parameters
from transformer_math.nn.hooks import hooks, run_with_cache
from transformer_math.nn.init import seeded

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
    torch.testing.assert_close(ours(x), expected, atol=1e-5, rtol=1e-5)


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
    out, cache = run_with_cache(ours, x, names=["hook_pattern"], key_padding_mask=pad,
                                is_causal=True)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(cache["hook_pattern"], w_ref, atol=1e-6, rtol=1e-5)
    # our boolean attn_mask uses the SDPA convention (True = allowed): the complement of torch's
    res2 = ours(x, key_padding_mask=pad, attn_mask=~causal_forbidden)
    torch.testing.assert_close(res2, expected, atol=1e-5, rtol=1e-5)


def test_cross_attention_equals_torch():
    ours, ref = _pair()
    x, memory = _x(t=4), _x(t=9, seed=3)
    expected, _ = ref(x, memory, memory, need_weights=False)
    torch.testing.assert_close(ours(x, memory), expected, atol=1e-5, rtol=1e-5)


def test_parameter_count_matches_formula():
    # 4 d^2 + 4 d for MHA with biases (d = 512, H = 8): 1,050,624
    assert count_parameters(MultiHeadAttention(512, 8)) == 4 * 512 * 512 + 4 * 512 == 1_050_624
    # GQA with 2 kv heads: q and o are d x d, k and v are d x (2 * 64)
    gqa = MultiHeadAttention(512, 8, num_kv_heads=2, bias=False)
    assert count_parameters(gqa) == 2 * 512 * 512 + 2 * 512 * 128


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
@pytest.mark.parametrize("backend", ["sdpa", "reference"])
def test_cached_decoding_equals_full_recomputation(num_kv_heads, backend):
    mha = seeded(lambda: MultiHeadAttention(E, H, num_kv_heads=num_kv_heads, backend=backend),
                 0).eval()
    x = _x(t=9)
    full = mha(x, is_causal=True)
    cache = KVCache()
    prefix = mha(x[:, :4], is_causal=True, kv_cache=cache)  # prefill 4 tokens
    steps = [mha(x[:, t : t + 1], is_causal=True, kv_cache=cache) for t in range(4, 7)]
    chunk = mha(x[:, 7:9], is_causal=True, kv_cache=cache)  # two tokens at once
    incremental = torch.cat([prefix, *steps, chunk], dim=1)
    torch.testing.assert_close(incremental, full, atol=1e-5, rtol=1e-5)
    assert cache.seq_len == 9


def test_multi_query_attention_shares_one_kv_head():
    mha = MultiHeadAttention(E, H, num_kv_heads=1)
    assert mha.k_proj.out_features == E // H and mha.v_proj.out_features == E // H
    assert mha(_x()).shape == (2, 6, E)


def test_scale_fn_replaces_default_scale():
    mha = seeded(lambda: MultiHeadAttention(E, H, backend="reference",
                                            scale_fn=lambda d, n: 0.0), 0).eval()
    _, cache = run_with_cache(mha, _x(), names=["hook_pattern"])
    # scale 0 makes every weight uniform over the keys
    weights = cache["hook_pattern"]
    torch.testing.assert_close(weights, torch.full_like(weights, 1 / 6))


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


def test_forward_returns_the_output_tensor_and_pattern_only_when_listened_to():
    mha = seeded(lambda: MultiHeadAttention(E, H), 0).eval()
    out = mha(_x())
    assert isinstance(out, torch.Tensor) and out.shape == (2, 6, E)
    assert not mha.hook_pattern.active()  # nothing listens: no weights are materialised
    again, cache = run_with_cache(mha, _x(), names=["hook_pattern"])
    assert set(cache) == {"hook_pattern"} and cache["hook_pattern"].shape == (2, H, 6, 6)
    torch.testing.assert_close(again, out)  # listening does not change the output
    assert not mha.hook_pattern.active()  # the listener is removed afterwards


def _reference_weights(mha: MultiHeadAttention, x: torch.Tensor, **kwargs) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k) + mask) from the module's own projections (reference backend)."""
    q, k, v = mha.project_qkv(x, x, x)
    res = scaled_dot_product_attention(q, k, v, return_weights=True, backend="reference",
                                       **kwargs)
    assert res.weights is not None
    return res.weights


@pytest.mark.parametrize("backend", ["sdpa", "reference", "tiled"])
def test_hook_pattern_equals_the_reference_weights(backend):
    mha = seeded(lambda: MultiHeadAttention(E, H, backend=backend), 0).eval()
    x = _x(t=7)
    with torch.no_grad():
        _, cache = run_with_cache(mha, x, names=["hook_pattern", "hook_scores"], is_causal=True)
        _, pattern_only = run_with_cache(mha, x, names=["hook_pattern"], is_causal=True)
        expected = _reference_weights(mha, x, is_causal=True)
    torch.testing.assert_close(cache["hook_pattern"], expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(pattern_only["hook_pattern"], expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(cache["hook_scores"].softmax(-1), expected, atol=1e-6, rtol=1e-5)
    assert torch.isneginf(cache["hook_scores"][..., 0, 1:]).all()  # blocked = -inf
    # the other direction: weights of another module are not this module's pattern
    other = seeded(lambda: MultiHeadAttention(E, H, backend=backend), 1).eval()
    with torch.no_grad():
        assert not torch.allclose(cache["hook_pattern"], _reference_weights(other, x,
                                                                            is_causal=True))


@pytest.mark.parametrize("listen_to_scores", [False, True])
def test_a_patched_pattern_changes_the_output_accordingly(listen_to_scores):
    """Replacing the pattern P at hook_pattern gives W_O concat(P V): uniform weights give the
    mean of the values, the identity pattern gives the values themselves, and returning None
    (no replacement) leaves the output as it was."""
    mha = seeded(lambda: MultiHeadAttention(E, H, backend="reference"), 0).eval()
    x = _x(t=5)
    b, t = x.shape[:2]
    with torch.no_grad():
        plain = mha(x)
        _, _, v = mha.project_qkv(x, x, x)  # (B, H, T, d_k)

        def through_w_o(z: torch.Tensor) -> torch.Tensor:
            return mha.out_proj(z.transpose(1, 2).reshape(b, t, E))

        extra = {"hook_scores": lambda s, hook: None} if listen_to_scores else {}
        with hooks(mha, {"hook_pattern": lambda p, hook: torch.full_like(p, 1 / t), **extra}):
            uniform = mha(x)
        with hooks(mha, {"hook_pattern": lambda p, hook: torch.eye(t).expand_as(p), **extra}):
            identity = mha(x)
        with hooks(mha, {"hook_pattern": lambda p, hook: None, **extra}):
            untouched = mha(x)
    torch.testing.assert_close(uniform, through_w_o(v.mean(dim=2, keepdim=True).expand_as(v)))
    torch.testing.assert_close(identity, through_w_o(v))
    torch.testing.assert_close(untouched, plain)
    assert not torch.allclose(uniform, plain) and not torch.allclose(identity, plain)


def test_hook_scores_needs_an_exact_softmax_backend():
    linear = seeded(lambda: MultiHeadAttention(E, H, backend="linear"), 0).eval()
    with pytest.raises(ValueError, match="hook_scores needs a softmax backend"):
        run_with_cache(linear, _x(), names=["hook_scores"])
    # the pattern of the kernel backend can still be read, and an exact backend gives scores
    _, cache = run_with_cache(linear, _x(), names=["hook_pattern"])
    assert cache["hook_pattern"].shape == (2, H, 6, 6)
    exact = seeded(lambda: MultiHeadAttention(E, H, backend="sdpa"), 0).eval()
    _, cache = run_with_cache(exact, _x(), names=["hook_scores"])
    assert cache["hook_scores"].shape == (2, H, 6, 6)


def test_reset_parameters_is_reproducible_from_a_generator():
    a, b = MultiHeadAttention(E, H), MultiHeadAttention(E, H)
    a.reset_parameters(torch.Generator().manual_seed(7))
    b.reset_parameters(torch.Generator().manual_seed(7))
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    bound = 1 / E**0.5
    assert a.q_proj.weight.abs().max() <= bound and a.q_proj.weight.std() > bound / 3


# Planted bugs (issue 14): each differs from the correct module, which is right.


def test_kv_heads_ignored_builds_plain_mha_and_the_correct_module_groups():
    with torch.no_grad():
        good = seeded(lambda: MultiHeadAttention(E, H, num_kv_heads=2), 0)
    assert good.k_proj.out_features == 2 * (E // H)
    assert count_parameters(good) == (H + 2 * 2) * (E // H) * (E + 1) + E * E + E
    with plant("attention.gqa-kv-heads-ignored"):
        bad = seeded(lambda: MultiHeadAttention(E, H, num_kv_heads=2), 0)
    assert bad.num_kv_heads == H and bad.k_proj.out_features == E
    assert count_parameters(bad) == 4 * E * E + 4 * E


def test_scale_by_model_width_differs_from_the_head_scale():
    mha = seeded(lambda: MultiHeadAttention(E, H, backend="reference"), 0).double().eval()
    x = _x(dtype=torch.float64)
    with torch.no_grad():
        q, k, v = mha.project_qkv(x, x, x)
        good = mha(x)
        head_scaled = scaled_dot_product_attention(q, k, v, scale=(E // H) ** -0.5).output
        torch.testing.assert_close(good, mha.out_proj(head_scaled.transpose(1, 2).flatten(2)))
        with plant("attention.scale-by-model-width"):
            bad = mha(x)
        wide = scaled_dot_product_attention(q, k, v, scale=E**-0.5).output
    torch.testing.assert_close(bad, mha.out_proj(wide.transpose(1, 2).flatten(2)))
    assert (bad - good).abs().max() > 1e-4
