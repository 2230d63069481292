"""Tests of nn/position.py, functional/positional.py and the RoPE/ALiBi wiring of
MultiHeadAttention (issue #3); MultiHeadAttention returns its output tensor (issue 13)."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.functional.positional import (
    alibi_bias,
    alibi_slopes,
    sinusoidal_shift_matrix,
    sinusoidal_table,
)
from transformer_math.nn.attention import KVCache, MultiHeadAttention
from transformer_math.nn.init import seeded
from transformer_math.nn.position import (
    ALiBi,
    LearnedPositionalEmbedding,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
)


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_sinusoidal_bounded_and_shift() -> None:
    pe = sinusoidal_table(200, 16).double()
    assert pe.abs().max() <= 1.0
    M = sinusoidal_shift_matrix(7, 16)
    torch.testing.assert_close(pe[7:] , pe[:-7] @ M.T, atol=1e-5, rtol=0)
    assert torch.cdist(pe, pe).add(torch.eye(200, dtype=torch.float64)).min() > 1e-3


def test_sinusoidal_module_offset() -> None:
    mod = SinusoidalPositionalEncoding(8)
    x = torch.zeros(1, 4, 8)
    torch.testing.assert_close(mod(x, offset=3), sinusoidal_table(7, 8)[3:].unsqueeze(0))


def test_alibi_slopes_power_of_two_and_other() -> None:
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0 ** -(i + 1) for i in range(8)]))
    s6 = alibi_slopes(6)
    s4, s8 = alibi_slopes(4), alibi_slopes(8)
    torch.testing.assert_close(s6, torch.cat([s4, s8[0::2][:2]]))
    bias = alibi_bias(s6, torch.arange(5), torch.arange(5))
    assert bias.shape == (6, 5, 5)
    torch.testing.assert_close(bias[2, 4, 1], -s6[2] * 3)
    assert ALiBi(3)(torch.arange(2), torch.arange(4)).shape == (1, 3, 2, 4)
    with pytest.raises(ValueError, match="num_heads"):
        alibi_slopes(0)


def test_learned_embedding_limit() -> None:
    emb = LearnedPositionalEmbedding(8, 4, generator=_g())
    emb(torch.zeros(2, 8, 4))
    with pytest.raises(IndexError, match="outside the learned table of 8 positions"):
        emb(torch.zeros(2, 9, 4))
    with pytest.raises(IndexError):
        emb(torch.zeros(1, 2, 4), offset=7)


def test_rotary_cache_grows_and_is_float32() -> None:
    rot = RotaryEmbedding(16, max_position_embeddings=4)
    assert rot.cached_positions == 4
    cos, _ = rot(torch.arange(0, 37))
    assert rot.cached_positions == 64
    assert cos.dtype == torch.float32 and cos.shape == (37, 16)
    x = torch.randn(1, 2, 37, 16, generator=_g()).to(torch.bfloat16)
    assert rot.rotate(x, torch.arange(37)).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="rotary_dim must be even"):
        RotaryEmbedding(16, rotary_dim=5)
    with pytest.raises(ValueError, match="rope_type must be one of"):
        RotaryEmbedding(16, scaling={"rope_type": "bogus"})


def test_rotary_partial_and_scaling() -> None:
    rot = RotaryEmbedding(16, partial_rotary_factor=0.5,
                          scaling={"rope_type": "yarn", "factor": 4.0,
                                   "original_max_position_embeddings": 32})
    assert rot.rotary_dim == 8
    assert rot.attention_factor == pytest.approx(0.1 * math.log(4) + 1)
    cos, _ = rot(torch.arange(3))
    torch.testing.assert_close(cos[0], torch.full((8,), rot.attention_factor))
    dyn = RotaryEmbedding(16, scaling={"rope_type": "dynamic", "factor": 2.0,
                                       "original_max_position_embeddings": 8})
    short = dyn(torch.arange(8))[1]
    long = dyn(torch.arange(16))[1]
    torch.testing.assert_close(short, RotaryEmbedding(16)(torch.arange(8))[1])
    assert not torch.allclose(long[:8], short)  # base changed with length


@pytest.mark.parametrize("num_kv_heads", [4, 2])
def test_cached_decoding_with_rope_equals_full(num_kv_heads: int) -> None:
    mha = seeded(lambda: MultiHeadAttention(32, 4, num_kv_heads=num_kv_heads,
                                            rotary=RotaryEmbedding(8)), 0)
    x = torch.randn(2, 11, 32, generator=_g(1))
    full = mha(x, is_causal=True)
    cache = KVCache()
    parts = [mha(x[:, :5], is_causal=True, kv_cache=cache)]
    for t in range(5, 11):
        parts.append(mha(x[:, t:t + 1], is_causal=True, kv_cache=cache))
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=1e-5, rtol=1e-5)


def test_cached_decoding_with_alibi_equals_full() -> None:
    mha = seeded(lambda: MultiHeadAttention(16, 4, alibi=True), 0)
    x = torch.randn(1, 9, 16, generator=_g(2))
    full = mha(x, is_causal=True)
    cache = KVCache()
    parts = [mha(x[:, t:t + 1], is_causal=True, kv_cache=cache) for t in range(9)]
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=1e-5, rtol=1e-5)


def test_rope_attention_is_shift_invariant_and_validates() -> None:
    mha = seeded(lambda: MultiHeadAttention(16, 2, rotary=RotaryEmbedding(8)), 0)
    x = torch.randn(1, 6, 16, generator=_g(3))
    a = mha(x, is_causal=True)
    b = mha(x, is_causal=True, position_ids=torch.arange(100, 106))
    torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="self-attention"):
        mha(x, torch.randn(1, 3, 16))
    with pytest.raises(ValueError, match="head_dim"):
        MultiHeadAttention(16, 2, rotary=RotaryEmbedding(4))


def test_plain_attention_unchanged() -> None:
    mha = seeded(lambda: MultiHeadAttention(16, 2), 0)
    assert mha.rotary is None and mha.alibi is None
    x = torch.randn(1, 4, 16, generator=_g(4))
    out = mha(x, is_causal=True)
    ref = mha(x, is_causal=True, position_ids=torch.arange(50, 54))
    torch.testing.assert_close(out, ref)


# ------------------------------------------------------------------ planted bugs (issue 14)


def test_learned_silent_clamp_bug() -> None:
    from transformer_math.bugs import plant

    emb = LearnedPositionalEmbedding(4, 3, generator=_g(0))
    with pytest.raises(IndexError, match="outside the learned table"):
        emb(torch.zeros(1, 6, 3))
    with plant("position.learned-silent-clamp"):
        out = emb(torch.zeros(1, 6, 3))  # no error: rows 4 and 5 reuse row 3
    torch.testing.assert_close(out[0, 4], emb.weight[3].detach())
    torch.testing.assert_close(out[0, 5], emb.weight[3].detach())


def test_rotary_module_uses_rope_angles_so_the_bf16_bug_reaches_it() -> None:
    from transformer_math.bugs import plant

    cos, _ = RotaryEmbedding(64)(torch.tensor([4000]))
    with plant("rope.angles-in-bf16"):
        bad, _ = RotaryEmbedding(64)(torch.tensor([4000]))
    exact = torch.cos(4000 * RotaryEmbedding(64).inv_freq.double())
    assert float((cos[0, :32].double() - exact).abs().max()) < 1e-3
    assert float((bad[0, :32].double() - exact).abs().max()) > 0.1


def test_kv_positions_restart_bug() -> None:
    """The decoder numbers cached steps past .. past + t - 1; the planted bug restarts at 0."""
    from transformer_math.bugs import plant
    from transformer_math.nn.config import TransformerConfig
    from transformer_math.nn.transformer import build_transformer

    config = TransformerConfig(hidden_size=16, num_heads=2, num_layers=1, output_size=0,
                               max_seq_len=8, position="sinusoidal",
                               attention_backend="reference")
    model = build_transformer(config, _g(0))
    x = torch.randn(1, 6, 16, generator=_g(1))

    def cached() -> torch.Tensor:
        with torch.no_grad():
            caches = model.new_caches()
            outs = [model(inputs_embeds=x[:, :3], caches=caches)]
            outs += [model(inputs_embeds=x[:, i:i + 1], caches=caches) for i in range(3, 6)]
        return torch.cat(outs, dim=1)

    with torch.no_grad():
        full = model(inputs_embeds=x)
    torch.testing.assert_close(cached(), full, atol=1e-5, rtol=1e-5)
    with plant("position.kv-positions-restart"):
        bad = cached()
    assert float((bad[:, 3:] - full[:, 3:]).abs().max()) > 1e-3
