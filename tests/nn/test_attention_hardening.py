"""MultiHeadAttention under careless input (issue 15): a failed call leaves the KV cache exactly
as it was, and degenerate sizes are refused with a message naming the argument."""

from __future__ import annotations

import pytest
import torch

import transformer_math.functional.linear_attention  # registers "linear"
import transformer_math.functional.tiled_attention  # noqa: F401  (registers "tiled")
from transformer_math.nn.attention import KVCache, MultiHeadAttention
from transformer_math.nn.position import RotaryEmbedding


def _module(backend: str = "sdpa", **kwargs) -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(16, 4, num_kv_heads=2, backend=backend, **kwargs).eval()


def _bad_calls(x: torch.Tensor):
    """Calls that must fail, each as (name, kwargs overriding the good call)."""
    return [
        ("mask of the wrong shape", {"attn_mask": torch.ones(5, 7, dtype=torch.bool)}),
        ("key padding mask of the wrong shape",
         {"key_padding_mask": torch.zeros(1, 99, dtype=torch.bool)}),
        ("additive mask with NaN", {"attn_mask": torch.full((1, 4), float("nan"))}),
        ("wrong input width", {"query": torch.randn(1, 1, 15)}),
        ("wrong dtype", {"query": x.double()}),
        ("wrong batch", {"query": torch.randn(3, 1, 16)}),
        ("key of the wrong width", {"key": torch.randn(1, 1, 15)}),
        ("2-D attn_mask for the wrong key length", {"attn_mask": torch.zeros(1, 3)}),
    ]


@pytest.mark.parametrize("backend", ["sdpa", "reference", "tiled", "linear"])
def test_failed_call_leaves_the_kv_cache_unchanged(backend):
    """before: a call with a bad mask had already appended to the cache, so the next good step
    differed from the same step without the failed call by 0.12 (sdpa)."""
    m = _module(backend)
    gen = torch.Generator().manual_seed(1)
    prompt = torch.randn(1, 3, 16, generator=gen)
    step = torch.randn(1, 1, 16, generator=gen)
    clean, dirty = KVCache(), KVCache()
    with torch.no_grad():
        m(prompt, kv_cache=clean, is_causal=True)
        m(prompt, kv_cache=dirty, is_causal=True)
        key, value = dirty.key.clone(), dirty.value.clone()
        for name, override in _bad_calls(step):
            kwargs = {"query": step, "kv_cache": dirty, "is_causal": True, **override}
            with pytest.raises((ValueError, TypeError)):
                m(**kwargs)
            assert dirty.seq_len == 3, name
            assert torch.equal(dirty.key, key) and torch.equal(dirty.value, value), name
        good = m(step, kv_cache=clean, is_causal=True)
        after_failures = m(step, kv_cache=dirty, is_causal=True)
    assert clean.seq_len == dirty.seq_len == 4
    assert torch.equal(good, after_failures)


def test_failed_call_in_the_backend_leaves_the_cache_unchanged():
    """A failure late in the call (the tiled backend refuses attention dropout) is also
    transactional, as is one from ALiBi (3-D position ids) and from a scale_fn."""
    m = MultiHeadAttention(16, 4, backend="tiled", dropout=0.1).train()
    cache = KVCache()
    with pytest.raises(ValueError, match="dropout_p must be 0"):
        m(torch.randn(1, 3, 16), kv_cache=cache, is_causal=True)
    assert cache.key is None and cache.seq_len == 0
    m = MultiHeadAttention(16, 4, alibi=True).eval()
    with pytest.raises(ValueError, match="alibi needs position_ids of shape"):
        m(torch.randn(1, 3, 16), kv_cache=cache, position_ids=torch.arange(3)[None, None])
    assert cache.seq_len == 0

    def bad_scale(head_dim: int, k_len: int) -> float:
        raise ValueError("scale_fn failed")

    m = MultiHeadAttention(16, 4, scale_fn=bad_scale).eval()
    with pytest.raises(ValueError, match="scale_fn failed"):
        m(torch.randn(1, 3, 16), kv_cache=cache)
    assert cache.seq_len == 0


def test_kv_cache_with_rotary_still_matches_a_full_forward():
    """The transactional cache gives the same numbers as before: incremental decoding equals
    the full causal forward pass."""
    torch.manual_seed(0)
    m = MultiHeadAttention(16, 4, rotary=RotaryEmbedding(4)).eval()
    x = torch.randn(2, 6, 16)
    with torch.no_grad():
        full = m(x, is_causal=True)
        cache = KVCache()
        parts = [m(x[:, :3], kv_cache=cache, is_causal=True)]
        parts += [m(x[:, i:i + 1], kv_cache=cache, is_causal=True) for i in range(3, 6)]
    torch.testing.assert_close(torch.cat(parts, dim=1), full)
    assert cache.seq_len == 6


def test_kv_cache_extended_does_not_store_and_append_does():
    cache = KVCache()
    k = torch.randn(1, 2, 3, 4)
    full_k, _ = cache.extended(k, k)
    assert cache.key is None and full_k is k
    cache.append(k, k)
    full_k, _ = cache.extended(k, k)
    assert cache.seq_len == 3 and full_k.shape == (1, 2, 6, 4)
    with pytest.raises(ValueError, match="do not match the cache"):
        cache.extended(torch.randn(1, 3, 1, 4), torch.randn(1, 3, 1, 4))
    with pytest.raises(TypeError, match="cache's dtype"):
        cache.extended(k.double(), k.double())
    with pytest.raises(ValueError, match="equal leading dims"):
        cache.extended(k, torch.randn(1, 2, 2, 4))
    assert cache.seq_len == 3


@pytest.mark.parametrize("head_dim", [0, -1, 2.0, True])
def test_head_dim_must_be_a_positive_int(head_dim):
    """before: head_dim=0 built a module with empty projections (and a ZeroDivisionError in
    1/sqrt(head_dim) at the first call)."""
    with pytest.raises(ValueError, match="head_dim must be a positive int"):
        MultiHeadAttention(8, 2, head_dim=head_dim)


def test_zero_kv_heads_is_refused_by_name():
    with pytest.raises(ValueError, match=r"num_kv_heads \(0\)"):
        MultiHeadAttention(8, 2, num_kv_heads=0)


def test_a_model_call_failing_in_a_later_layer_leaves_every_cache_unchanged():
    """A Transformer call that raises in layer 1 must not leave layer 0's cache extended (the
    layers' caches are restored together), so the next good step equals a clean run's."""
    from transformer_math.nn.config import TransformerConfig
    from transformer_math.nn.transformer import build_transformer

    cfg = TransformerConfig(hidden_size=16, num_layers=2, num_heads=4, vocab_size=11,
                            position="rope")
    model = build_transformer(cfg, seed=0).eval()
    ids = torch.tensor([[1, 2, 3]])
    step = torch.tensor([[4]])
    clean = model.new_caches()
    with torch.no_grad():
        model(ids, caches=clean)
        want = model(step, caches=clean)
        caches = model.new_caches()
        model(ids, caches=caches)

        def boom(*_args):
            raise RuntimeError("layer 1 fails")

        handle = model.layers[1].register_forward_pre_hook(boom)
        with pytest.raises(RuntimeError, match="layer 1 fails"):
            model(step, caches=caches)
        handle.remove()
        assert [c.seq_len for c in caches] == [3, 3]
        assert torch.equal(model(step, caches=caches), want)


def test_alibi_models_generate_with_a_padded_batch():
    """generate() passes an attention mask, hence (B, T) position ids: an ALiBi model decodes,
    and a left-padded row continues exactly as the same prompt alone (it used to raise
    "alibi needs 1-D position_ids")."""
    from transformer_math.nn.config import TransformerConfig
    from transformer_math.nn.transformer import build_transformer

    cfg = TransformerConfig(hidden_size=16, num_layers=2, num_heads=4, vocab_size=13,
                            position="alibi")
    model = build_transformer(cfg, seed=0).eval()
    alone = model.generate(torch.tensor([[3, 4, 5]]), max_new_tokens=5)
    batch = torch.tensor([[3, 4, 5], [0, 7, 8]])
    mask = torch.tensor([[1, 1, 1], [0, 1, 1]])
    both = model.generate(batch, max_new_tokens=5, attention_mask=mask)
    assert torch.equal(both[0], alone[0])
    short = model.generate(torch.tensor([[7, 8]]), max_new_tokens=5)
    assert torch.equal(both[1, 1:], short[0])
