"""Norms, feed-forward, blocks, encoder/decoder: values, shapes, causality and masking."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.functional.norms import layer_norm, rms_norm
from transformer_math.nn.blocks import BlockConfig, Decoder, DecoderLayer, Encoder, TransformerBlock
from transformer_math.nn.feedforward import GeluMLP, SwiGLU, build_feedforward
from transformer_math.nn.norms import LayerNorm, RMSNorm, build_norm


def test_layer_norm_matches_torch() -> None:
    x = torch.randn(3, 5, 16)
    w, b = torch.randn(16), torch.randn(16)
    torch.testing.assert_close(layer_norm(x, w, b), torch.nn.functional.layer_norm(x, (16,), w, b))


def test_rms_norm_geometry() -> None:
    x = torch.randn(10, 32, dtype=torch.float64) + 3
    y = rms_norm(x, eps=0.0)
    torch.testing.assert_close(
        y.norm(dim=-1), torch.full((10,), math.sqrt(32), dtype=torch.float64)
    )
    torch.testing.assert_close(rms_norm(7 * x, eps=0.0), y)
    assert (rms_norm(x + 1, eps=0.0) - y).abs().max() > 0.01


def test_norm_modules_and_registry() -> None:
    assert sum(p.numel() for p in LayerNorm(8).parameters()) == 16
    assert sum(p.numel() for p in RMSNorm(8).parameters()) == 8
    assert isinstance(build_norm("rmsnorm", 4), RMSNorm)
    with pytest.raises(ValueError, match="norm_type"):
        build_norm("batchnorm", 4)
    with pytest.raises(ValueError, match="weight"):
        layer_norm(torch.randn(2, 4), torch.ones(3))


def test_feedforward_shapes_and_params() -> None:
    x = torch.randn(2, 3, 8)
    assert GeluMLP(8, 32)(x).shape == x.shape
    assert SwiGLU(8, 32)(x).shape == x.shape
    assert sum(p.numel() for p in GeluMLP(8, 32).parameters()) == 2 * 8 * 32 + 32 + 8
    assert sum(p.numel() for p in SwiGLU(8, 32).parameters()) == 3 * 8 * 32
    with pytest.raises(ValueError, match="ffn_type"):
        build_feedforward("relu2", 8, 32)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_block_causality(norm: str) -> None:
    torch.manual_seed(0)
    block = TransformerBlock(
        BlockConfig(dim=16, num_heads=2, norm=norm, ffn_type="swiglu", norm_type="rmsnorm")
    )
    x = torch.randn(2, 6, 16)
    y = block(x, is_causal=True)
    x2 = x.clone()
    x2[:, 4:] += 1.0
    torch.testing.assert_close(block(x2, is_causal=True)[:, :4], y[:, :4])
    assert (block(x2, is_causal=True)[:, 4:] - y[:, 4:]).abs().max() > 1e-3


def test_post_norm_block_output_is_normalised() -> None:
    block = TransformerBlock(BlockConfig(dim=16, num_heads=2, norm="post"))
    y = block(torch.randn(2, 5, 16) * 10)
    torch.testing.assert_close(y.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)


def test_encoder_decoder_shapes_causality_and_cross_masking() -> None:
    torch.manual_seed(0)
    cfg = BlockConfig(dim=16, num_heads=4)
    enc, dec = Encoder(cfg, 2).eval(), Decoder(cfg, 2).eval()
    src, tgt = torch.randn(2, 7, 16), torch.randn(2, 5, 16)
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, 4:] = True
    memory = enc(src, key_padding_mask=pad)
    out = dec(tgt, memory, memory_key_padding_mask=pad)
    assert memory.shape == (2, 7, 16) and out.shape == (2, 5, 16)
    # padded source positions cannot influence the decoder
    memory2 = memory.clone()
    memory2[1, 4:] = 100.0
    torch.testing.assert_close(dec(tgt, memory2, memory_key_padding_mask=pad), out)
    # future targets cannot influence earlier outputs
    tgt2 = tgt.clone()
    tgt2[:, 3:] = 0.0
    torch.testing.assert_close(dec(tgt2, memory, memory_key_padding_mask=pad)[:, :3], out[:, :3])


def test_decoder_layer_rejects_bad_memory() -> None:
    layer = DecoderLayer(BlockConfig(dim=8, num_heads=2))
    with pytest.raises(ValueError, match="memory"):
        layer(torch.randn(2, 3, 8), torch.randn(3, 4, 8))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dim": 10, "num_heads": 3},
        {"dim": 8, "num_heads": 2, "norm": "middle"},
        {"dim": 8, "num_heads": 2, "dropout": 1.5},
        {"dim": 0, "num_heads": 1},
    ],
)
def test_block_config_rejects_nonsense(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        BlockConfig(**kwargs)
