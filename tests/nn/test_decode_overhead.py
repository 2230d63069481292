"""Issue 36 item 3, the per-token overhead removed from decoding, checked for equal results:
grouped key/value heads inside torch's kernel (no repeat_kv copies) give the repeated-heads
output and the NaN contract per query group; the rotary tables are looked up once per forward
(not once per layer) and give the per-layer lookup's logits bit for bit."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_math.functional.attention import scaled_dot_product_attention as attend
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.position import RotaryEmbedding
from transformer_math.nn.transformer import Transformer, build_transformer


def _gqa(t: int, s: int, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 8, t, 16, generator=g)
    k, v = (torch.randn(2, 2, s, 16, generator=g) for _ in range(2))
    return q, k, v


@pytest.mark.parametrize(("t", "s", "causal"), [(5, 5, True), (1, 7, True), (4, 6, False),
                                                (3, 3, False)])
def test_grouped_sdpa_equals_explicitly_repeated_heads(t, s, causal):
    """Query head h reads kv head h // 4 (H = 8, H_kv = 2): torch SDPA on heads repeated by
    repeat_interleave, computed here, is the reference."""
    q, k, v = _gqa(t, s)
    ours = attend(q, k, v, is_causal=causal, backend="sdpa").output
    kr, vr = k.repeat_interleave(4, dim=1), v.repeat_interleave(4, dim=1)
    if causal and t != s:  # bottom-right alignment, written out
        allowed = torch.arange(s)[None, :] <= torch.arange(t)[:, None] + (s - t)
        ref = F.scaled_dot_product_attention(q, kr, vr, attn_mask=allowed)
    else:
        ref = F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_grouped_sdpa_bad_key_reaches_exactly_its_query_group(bad):
    q, k, v = _gqa(1, 6, seed=1)
    k[1, 1, 2, 5] = bad  # batch 1, kv head 1 -> query heads 4..7
    out = attend(q, k, v, is_causal=True, backend="sdpa").output
    assert out[1, 4:].isnan().all()
    assert torch.isfinite(out[0]).all() and torch.isfinite(out[1, :4]).all()


def _rope_model(layers: int = 3) -> Transformer:
    cfg = TransformerConfig(vocab_size=50, max_seq_len=64, hidden_size=32, num_heads=4,
                            num_kv_heads=2, num_layers=layers, position="rope")
    return build_transformer(cfg, 0).eval()


def test_rotary_tables_are_looked_up_once_per_forward_and_change_nothing(monkeypatch):
    model = _rope_model()
    assert model.rotary is not None
    calls: list[int] = []
    model.rotary.register_forward_hook(lambda *_: calls.append(1))
    ids = torch.randint(0, 50, (2, 9), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[0, :3] = 0  # left padding: batched (B, T) positions
    with torch.no_grad():
        once = model(ids, attention_mask=mask)
        assert len(calls) == 1
        tokens = model.generate(ids[:1], 4)
        assert len(calls) == 1 + 4  # one lookup per decoding step, not one per layer
        monkeypatch.setattr(Transformer, "_rotary_tables", lambda self, pos: None)
        per_layer = model(ids, attention_mask=mask)
        assert len(calls) == 1 + 4 + 3
        assert torch.equal(once, per_layer)
        assert torch.equal(tokens, model.generate(ids[:1], 4))


def test_a_layer_with_its_own_rotary_looks_up_its_own_tables():
    model = _rope_model(layers=2)
    own = RotaryEmbedding(model.config.dim_per_head, base=500.0)
    model.layers[1].attn.rotary = own
    assert model._rotary_tables(torch.arange(4)) is None
    calls: list[int] = []
    own.register_forward_hook(lambda *_: calls.append(1))
    with torch.no_grad():
        model(torch.arange(4).unsqueeze(0))
    assert calls == [1]


def _window_model() -> Transformer:
    cfg = TransformerConfig(vocab_size=50, max_seq_len=64, hidden_size=32, num_heads=4,
                            num_kv_heads=2, num_layers=2, position="rope", sliding_window=4)
    return build_transformer(cfg, 0).eval()


def _cached_logits(model: Transformer, ids: torch.Tensor, mask: torch.Tensor | None,
                   prompt: int) -> torch.Tensor:
    """Logits of every position: the prompt in one call, then one cached step per token."""
    caches = model.new_caches()
    outs = [model(ids[:, :prompt], caches=caches,
                  attention_mask=None if mask is None else mask[:, :prompt])]
    for i in range(prompt, ids.shape[1]):
        outs.append(model(ids[:, i:i + 1], caches=caches,
                          attention_mask=None if mask is None else mask[:, :i + 1]))
    return torch.cat(outs, dim=1)


@pytest.mark.parametrize("padded", [False, True])
def test_window_decoding_skips_the_keys_behind_the_window_with_equal_logits(padded, monkeypatch):
    """W = 4, 6 prompt tokens then 8 cached steps: the steps attend to the last W keys only
    (key_start) and give the full forward's logits; so does the masked path they replace."""
    from transformer_math.bugs import plant

    model = _window_model()
    ids = torch.randint(0, 50, (2, 14), generator=torch.Generator().manual_seed(2))
    mask = None
    if padded:
        mask = torch.ones(2, 14, dtype=torch.long)
        mask[1, :2] = 0
    starts: list[int] = []
    model.layers[0].attn.register_forward_pre_hook(
        lambda mod, args, kwargs: starts.append(kwargs.get("key_start", 0)), with_kwargs=True)
    with torch.no_grad():
        full = model(ids, attention_mask=mask)
        cached = _cached_logits(model, ids, mask, 6)
        assert starts[1:] == [0, 3, 4, 5, 6, 7, 8, 9, 10]  # from past = 6: past - W + 1
        torch.testing.assert_close(cached, full, atol=1e-5, rtol=1e-5)
        with plant("transformer.sliding-window-off-by-one"):  # the bug reaches the steps
            planted_full = model(ids, attention_mask=mask)
            planted_cached = _cached_logits(model, ids, mask, 6)
        torch.testing.assert_close(planted_cached, planted_full, atol=1e-5, rtol=1e-5)
        assert (planted_full - full).abs().max() > 1e-3
        monkeypatch.setattr(Transformer, "_can_skip_keys", lambda self: False)
        masked = _cached_logits(model, ids, mask, 6)
    torch.testing.assert_close(cached, masked, atol=1e-6, rtol=1e-6)


def test_kv_cache_grows_in_place_and_never_rewrites_what_it_returned():
    """Decoding steps write into spare room (one buffer for many steps); every tensor the cache
    handed out keeps its values through later steps, failed extensions, restores and copies."""
    import copy

    from transformer_math.nn.attention import KVCache

    g = torch.Generator().manual_seed(3)

    def kv(t: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(1, 2, t, 4, generator=g), torch.randn(1, 2, t, 4, generator=g)

    with torch.no_grad():
        cache = KVCache()
        cache.append(*kv(3))
        handed = [cache.append(*kv(1)) for _ in range(5)]
        assert cache.seq_len == 8
        ptrs = {k.data_ptr() for k, _ in handed}
        assert len(ptrs) == 1  # one buffer for the five steps
        saved = [(k.clone(), v.clone()) for k, v in handed]
        uncommitted = cache.extended(*kv(1))  # a call that failed after extending
        committed_before = cache.key.clone()
        cache.append(*kv(1))  # must not overwrite the uncommitted view
        assert cache.key.data_ptr() != uncommitted[0].data_ptr()
        assert torch.equal(cache.key[:, :, :8], committed_before)
        twin = copy.copy(cache)  # shares the room; the first to append keeps it
        a = twin.append(*kv(2))
        a_saved = a[0].clone()
        b = cache.append(*kv(2))
        assert torch.equal(a[0], a_saved) and not torch.equal(a[0], b[0])
        cache.key, cache.value = handed[1]  # a restore to an older view
        c = cache.append(*kv(1))
        assert c[0].shape[-2] == 6 and torch.equal(c[0][:, :, :5], saved[1][0])
        for (k, v), (ks, vs) in zip(handed, saved, strict=True):
            assert torch.equal(k, ks) and torch.equal(v, vs)


def test_kv_cache_with_autograd_concatenates_as_before():
    from transformer_math.nn.attention import KVCache

    k = torch.randn(1, 2, 3, 4, requires_grad=True)
    cache = KVCache()
    cache.append(k, k)
    full, _ = cache.append(k * 2, k * 2)
    assert cache._room is None and full.grad_fn is not None
    full.sum().backward()
    assert torch.equal(k.grad, torch.full_like(k, 3.0))


def test_small_rotation_path_equals_the_plane_by_plane_path():
    """apply_rotary's small (decoding-step) form and its general form agree to rounding, also
    with the planted sign bug (which both must apply)."""
    from transformer_math.bugs import plant
    from transformer_math.functional import rope

    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 4, 3, 16, generator=g)
    ang = torch.randn(3, 8, generator=g)
    cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
    for bug in (None, "rope.rotation-sign"):
        with torch.no_grad(), (plant(bug) if bug else torch.no_grad()):
            small = rope.apply_rotary(x, cos, sin)
            big = rope.apply_rotary(x.expand(2, 4, 3, 16).requires_grad_(False).repeat(
                1, rope.SMALL_ROTATION // 8, 1, 1), cos, sin)[:, :4]
        torch.testing.assert_close(small, big, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("kw", [
    dict(position="rope", norm="rmsnorm", feedforward="swiglu", num_kv_heads=2),
    dict(position="learned", norm="layernorm"),
    dict(position="rope", norm="layernorm", partial_rotary_factor=0.5),
])
def test_a_forward_gives_the_same_bits_with_and_without_autograd(kw):
    """The fused layer_norm and the small rotation are chosen by dtype and size, never by grad
    mode: run_with_cache (grad on) and a no-grad forward agree to the bit (the checkpoints'
    test_forward_output caught the difference, 4.8e-7, when they were chosen by grad mode)."""
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(vocab_size=50, **kw)).eval()
    ids = torch.randint(0, 50, (2, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        quiet = model(ids)
    recorded = model(ids)
    assert recorded.grad_fn is not None and torch.equal(quiet, recorded)
