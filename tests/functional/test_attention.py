"""Reference and fast attention paths against torch's own SDPA, masks, and bad input."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_math.bugs import plant
from transformer_math.functional.attention import (
    attention_scores,
    default_scale,
    repeat_kv,
    scaled_dot_product_attention,
)
from transformer_math.functional.masks import causal_mask
from transformer_math.functional.softmax import naive_softmax, stable_softmax

BACKENDS = ["reference", "sdpa"]
DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: 1e-5, torch.float64: 1e-12}


def _qkv(b=2, h=3, t=5, s=7, d=8, dtype=torch.float32, seed=0, h_kv=None):
    g = torch.Generator().manual_seed(seed)
    h_kv = h if h_kv is None else h_kv
    q = torch.randn(b, h, t, d, generator=g, dtype=dtype)
    k = torch.randn(b, h_kv, s, d, generator=g, dtype=dtype)
    v = torch.randn(b, h_kv, s, d, generator=g, dtype=dtype)
    return q, k, v


def _torch_reference(q, k, v, mask=None, is_causal=False):
    return TF.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_unmasked_matches_torch_sdpa(backend, dtype):
    q, k, v = _qkv(dtype=dtype)
    out = scaled_dot_product_attention(q, k, v, backend=backend).output
    torch.testing.assert_close(out, _torch_reference(q, k, v), atol=TOL[dtype], rtol=TOL[dtype])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_square_matches_torch_sdpa(backend, dtype):
    q, k, v = _qkv(t=6, s=6, dtype=dtype)
    out = scaled_dot_product_attention(q, k, v, is_causal=True, backend=backend).output
    expected = _torch_reference(q, k, v, is_causal=True)
    torch.testing.assert_close(out, expected, atol=TOL[dtype], rtol=TOL[dtype])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_boolean_and_additive_masks_match_torch_sdpa(backend, dtype):
    q, k, v = _qkv(dtype=dtype)
    g = torch.Generator().manual_seed(1)
    allowed = torch.rand(2, 1, 5, 7, generator=g) > 0.3
    allowed[..., 0] = True  # no fully masked row here; that case has its own test
    additive = torch.randn(2, 3, 5, 7, generator=g, dtype=dtype)
    out_bool = scaled_dot_product_attention(q, k, v, attn_mask=allowed, backend=backend).output
    torch.testing.assert_close(
        out_bool, _torch_reference(q, k, v, allowed), atol=TOL[dtype], rtol=TOL[dtype]
    )
    out_add = scaled_dot_product_attention(q, k, v, attn_mask=additive, backend=backend).output
    torch.testing.assert_close(
        out_add, _torch_reference(q, k, v, additive), atol=TOL[dtype], rtol=TOL[dtype]
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_combined_masks_equal_their_explicit_sum(backend):
    q, k, v = _qkv(t=7, s=7)
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, 5:] = True  # last two keys of batch 1 are padding
    extra = torch.ones(7, 7, dtype=torch.bool)
    extra[3, 1] = False
    out = scaled_dot_product_attention(
        q, k, v, attn_mask=extra, key_padding_mask=pad, is_causal=True, backend=backend
    ).output
    allowed = causal_mask(7, 7)[None, None] & extra[None, None] & ~pad[:, None, None, :]
    torch.testing.assert_close(out, _torch_reference(q, k, v, allowed), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_causal_with_cache_offset_is_bottom_right_aligned(backend):
    # 3 new queries after 4 cached positions: query i sees keys 0..4+i.
    q, k, v = _qkv(t=3, s=7)
    out = scaled_dot_product_attention(q, k, v, is_causal=True, backend=backend).output
    allowed = torch.arange(7)[None, :] <= (torch.arange(3)[:, None] + 4)
    torch.testing.assert_close(out, _torch_reference(q, k, v, allowed), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fully_masked_row_gives_zero_weights_and_output(backend):
    q, k, v = _qkv()
    allowed = torch.ones(5, 7, dtype=torch.bool)
    allowed[2] = False  # query 2 may attend to nothing
    res = scaled_dot_product_attention(
        q, k, v, attn_mask=allowed, backend=backend, return_weights=True
    )
    assert not torch.isnan(res.output).any()
    assert torch.all(res.output[:, :, 2] == 0)
    assert res.weights is not None and torch.all(res.weights[:, :, 2] == 0)
    others = res.weights[:, :, [0, 1, 3, 4]].sum(-1)
    torch.testing.assert_close(others, torch.ones_like(others))


def test_fully_padded_batch_entry_gives_zeros_in_fast_path():
    q, k, v = _qkv()
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[0] = True
    out = scaled_dot_product_attention(q, k, v, key_padding_mask=pad, backend="sdpa").output
    assert torch.all(out[0] == 0) and not torch.isnan(out).any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_grouped_query_attention_equals_repeated_heads(backend):
    q, k, v = _qkv(h=6, h_kv=2)
    out = scaled_dot_product_attention(q, k, v, backend=backend).output
    k_rep = k.repeat_interleave(3, dim=1)
    v_rep = v.repeat_interleave(3, dim=1)
    torch.testing.assert_close(out, _torch_reference(q, k_rep, v_rep), atol=1e-5, rtol=1e-5)


def test_reference_weights_are_the_softmax_of_scaled_logits():
    q, k, v = _qkv(dtype=torch.float64)
    res = scaled_dot_product_attention(q, k, v, return_weights=True)
    expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    torch.testing.assert_close(res.weights, expected)
    torch.testing.assert_close(res.output, expected @ v)


def test_custom_scale_is_used():
    q, k, v = _qkv(dtype=torch.float64)
    out = scaled_dot_product_attention(q, k, v, scale=0.3).output
    expected = torch.softmax(q @ k.transpose(-2, -1) * 0.3, dim=-1) @ v
    torch.testing.assert_close(out, expected)


def test_stable_softmax_handles_huge_logits_where_naive_fails():
    logits = torch.tensor([[1e4, 1e4 - 1.0, 0.0]])
    stable = stable_softmax(logits)
    torch.testing.assert_close(stable, torch.softmax(logits, dim=-1))
    assert torch.isnan(naive_softmax(logits)).any()


# --- property tests ------------------------------------------------------------------------

shapes = st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 9), st.integers(1, 6))


@settings(max_examples=25, deadline=None)
@given(shape=shapes, seed=st.integers(0, 10_000), backend=st.sampled_from(BACKENDS))
def test_permutation_equivariance(shape, seed, backend):
    b, h, n, d = shape
    q, k, v = _qkv(b, h, n, n, d, dtype=torch.float64, seed=seed)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    out = scaled_dot_product_attention(q, k, v, backend=backend).output
    out_perm = scaled_dot_product_attention(
        q[:, :, perm], k[:, :, perm], v[:, :, perm], backend=backend
    ).output
    torch.testing.assert_close(out_perm, out[:, :, perm])


@settings(max_examples=25, deadline=None)
@given(shape=shapes, seed=st.integers(0, 10_000), causal=st.booleans())
def test_weights_are_row_stochastic(shape, seed, causal):
    b, h, n, d = shape
    q, k, v = _qkv(b, h, n, n, d, dtype=torch.float64, seed=seed)
    w = scaled_dot_product_attention(q, k, v, is_causal=causal, return_weights=True).weights
    assert torch.all(w >= 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(b, h, n, dtype=torch.float64))
    if causal:
        assert torch.all(w.triu(diagonal=1) == 0)


@settings(max_examples=25, deadline=None)
@given(shape=shapes, seed=st.integers(0, 10_000), backend=st.sampled_from(BACKENDS))
def test_causal_output_ignores_future_tokens(shape, seed, backend):
    b, h, n, d = shape
    q, k, v = _qkv(b, h, n, n, d, dtype=torch.float64, seed=seed)
    t = n // 2
    g = torch.Generator().manual_seed(seed + 1)
    k2, v2 = k.clone(), v.clone()
    k2[:, :, t + 1 :] = torch.randn(k2[:, :, t + 1 :].shape, generator=g, dtype=torch.float64)
    v2[:, :, t + 1 :] = torch.randn(v2[:, :, t + 1 :].shape, generator=g, dtype=torch.float64)
    out1 = scaled_dot_product_attention(q, k, v, is_causal=True, backend=backend).output
    out2 = scaled_dot_product_attention(q, k2, v2, is_causal=True, backend=backend).output
    torch.testing.assert_close(out1[:, :, : t + 1], out2[:, :, : t + 1])


# --- bad input -------------------------------------------------------------------------------


def test_wrong_rank_names_the_argument():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"^k must have rank 4"):
        scaled_dot_product_attention(q, k[0], v)


def test_dtype_mix_is_rejected():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match="share one dtype"):
        scaled_dot_product_attention(q, k.double(), v)


def test_heads_must_divide():
    q, k, v = _qkv(h=3, h_kv=2)
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        scaled_dot_product_attention(q, k, v)


def test_head_dim_mismatch():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="share head_dim"):
        scaled_dot_product_attention(q[..., :4], k, v)


@pytest.mark.parametrize(
    "mask_shape",
    [(7, 5), (5,), (7,), (2, 5, 7), (3, 3, 5, 7), (2, 3, 5, 6)],
)
def test_mask_shapes_that_would_broadcast_silently_are_rejected(mask_shape):
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="attn_mask"):
        scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(mask_shape, dtype=torch.bool))


def test_key_padding_mask_shape_and_dtype_checked():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="key_padding_mask must have shape"):
        scaled_dot_product_attention(q, k, v, key_padding_mask=torch.zeros(2, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="key_padding_mask must be bool"):
        scaled_dot_product_attention(q, k, v, key_padding_mask=torch.zeros(2, 7))


def test_unknown_backend_and_bad_dropout():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="backend must be one of"):
        scaled_dot_product_attention(q, k, v, backend="nope")
    with pytest.raises(ValueError, match="dropout_p"):
        scaled_dot_product_attention(q, k, v, dropout_p=1.5)


def test_causal_needs_enough_keys():
    q, k, v = _qkv(t=7, s=5)
    with pytest.raises(ValueError, match="is_causal needs k_len >= q_len"):
        scaled_dot_product_attention(q, k, v, is_causal=True)


# ---------------------------------------------------------------------------------------------
# Planted bugs (issue 14): each one differs from the correct code, and the correct code is right.
# ---------------------------------------------------------------------------------------------


def test_default_scale_is_one_over_sqrt_dk_and_the_planted_scales_are_not():
    assert default_scale(64) == 0.125
    q, k, v = _qkv(dtype=torch.float64)
    ref = TF.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(scaled_dot_product_attention(q, k, v).output, ref)
    for bug, scale in (("attention.scale-by-dk", 1 / 8), ("attention.scale-dropped", 1.0)):
        with plant(bug):
            assert default_scale(8) == scale
            wrong = scaled_dot_product_attention(q, k, v).output
            logits = attention_scores(q, k)
        torch.testing.assert_close(wrong, TF.scaled_dot_product_attention(q, k, v, scale=scale))
        torch.testing.assert_close(logits, q @ k.transpose(-2, -1) * scale)
        assert not torch.allclose(wrong, ref)


def test_repeat_kv_groups_like_hugging_face_and_the_tiled_bug_does_not():
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float64).view(2, 3, 4, 5)
    grouped = repeat_kv(x, 2)
    torch.testing.assert_close(grouped, x.repeat_interleave(2, dim=1))
    # Hugging Face's repeat_kv (modeling_llama): expand on a new axis after the kv heads
    hf = x[:, :, None].expand(2, 3, 2, 4, 5).reshape(2, 6, 4, 5)
    torch.testing.assert_close(grouped, hf)
    with plant("attention.gqa-tiled"):
        tiled = repeat_kv(x, 2)
    torch.testing.assert_close(tiled, x.repeat(1, 2, 1, 1))
    assert not torch.equal(tiled, grouped)
    torch.testing.assert_close(tiled[:, 1], x[:, 1])  # query head 1 reads kv head 1, not 0


def test_mask_after_softmax_breaks_row_sums_and_the_correct_mask_keeps_them():
    q, k, v = _qkv(t=6, s=6, dtype=torch.float64)
    good = scaled_dot_product_attention(q, k, v, is_causal=True, return_weights=True).weights
    torch.testing.assert_close(good.sum(-1), torch.ones_like(good.sum(-1)))
    with plant("attention.mask-after-softmax"):
        bad = scaled_dot_product_attention(q, k, v, is_causal=True, return_weights=True).weights
    assert (bad[..., ~causal_mask(6, 6)] == 0).all()  # still zero above the diagonal ...
    assert (bad.sum(-1)[..., :-1] < 1 - 1e-6).all()  # ... but the rows lost weight


def test_softmax_wrong_axis_normalises_columns_and_the_correct_one_rows():
    q, k, v = _qkv(t=5, s=7, dtype=torch.float64)
    good = scaled_dot_product_attention(q, k, v, return_weights=True).weights
    torch.testing.assert_close(good.sum(-1), torch.ones_like(good.sum(-1)))
    with plant("attention.softmax-wrong-axis"):
        bad = scaled_dot_product_attention(q, k, v, return_weights=True).weights
    torch.testing.assert_close(bad.sum(-2), torch.ones_like(bad.sum(-2)))
    assert (bad.sum(-1) - 1).abs().max() > 0.1


def test_implicit_causal_masks_a_bidirectional_call_and_the_correct_code_does_not():
    q, k, v = _qkv(t=6, s=6, dtype=torch.float64)
    for backend in BACKENDS:
        full = scaled_dot_product_attention(q, k, v, backend=backend).output
        torch.testing.assert_close(full, TF.scaled_dot_product_attention(q, k, v))
        with plant("attention.implicit-causal"):
            bad = scaled_dot_product_attention(q, k, v, backend=backend).output
        torch.testing.assert_close(bad, TF.scaled_dot_product_attention(q, k, v, is_causal=True))


def test_backend_ignored_runs_the_reference_path_and_the_correct_dispatch_does_not():
    q, k, v = _qkv(dtype=torch.float64)
    linear = scaled_dot_product_attention(q, k, v, backend="linear").output
    softmax = scaled_dot_product_attention(q, k, v, backend="reference").output
    assert (linear - softmax).abs().max() > 1e-3  # elu + 1 kernel, not softmax
    with plant("attention.backend-ignored"):
        torch.testing.assert_close(scaled_dot_product_attention(q, k, v, backend="linear").output,
                                   softmax)


def test_causal_top_left_starves_cached_queries_and_bottom_right_does_not():
    right = causal_mask(2, 5)
    assert right.tolist() == [[True, True, True, True, False], [True] * 5]
    with plant("attention.causal-top-left"):
        left = causal_mask(2, 5)
    assert left.tolist() == [[True, False, False, False, False], [True, True, False, False, False]]
    assert torch.equal(causal_mask(4, 4), torch.ones(4, 4, dtype=torch.bool).tril())


def test_finfo_min_mask_spreads_a_fully_masked_row_and_minus_inf_zeroes_it():
    q, k, v = _qkv(b=2, t=3, s=4, dtype=torch.float32)
    padding = torch.zeros(2, 4, dtype=torch.bool)
    padding[1] = True  # every key of sequence 1
    for backend in BACKENDS:
        good = scaled_dot_product_attention(q, k, v, key_padding_mask=padding, backend=backend)
        assert (good.output[1] == 0).all() and torch.isfinite(good.output).all()
        with plant("attention.mask-finfo-min"):
            bad = scaled_dot_product_attention(q, k, v, key_padding_mask=padding,
                                               backend=backend)
        torch.testing.assert_close(bad.output[1], v[1].mean(-2, keepdim=True).expand_as(
            bad.output[1]))  # uniform weights over the padding
        torch.testing.assert_close(bad.output[0], good.output[0])  # partial rows unchanged


def test_softmax_without_the_max_shift_overflows_and_the_stable_one_does_not():
    x = torch.tensor([[1000.0, 999.0, -5.0]], dtype=torch.float32)
    good = stable_softmax(x)
    torch.testing.assert_close(good, torch.softmax(x, dim=-1))
    with plant("attention.softmax-no-max-shift"):
        bad = stable_softmax(x)
        torch.testing.assert_close(stable_softmax(x / 1000), torch.softmax(x / 1000, dim=-1))
    assert torch.isnan(bad).any()
