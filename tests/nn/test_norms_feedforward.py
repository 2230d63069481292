"""Norm and feed-forward modules: values, parameter counts, registry errors (was part of
tests/architecture/test_norms_blocks.py)."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_math.functional.norms import layer_norm, rms_norm
from transformer_math.nn.feedforward import GeluMLP, SwiGLU, build_feedforward
from transformer_math.nn.norms import LayerNorm, RMSNorm, build_norm


def test_layer_norm_matches_torch() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 16, generator=g)
    w, b = torch.randn(16, generator=g), torch.randn(16, generator=g)
    torch.testing.assert_close(layer_norm(x, w, b), torch.nn.functional.layer_norm(x, (16,), w, b))


def test_rms_norm_geometry() -> None:
    x = torch.randn(10, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) + 3
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
    with pytest.raises(ValueError, match="batchnorm"):
        build_norm("batchnorm", 4)
    with pytest.raises(ValueError, match="weight"):
        layer_norm(torch.randn(2, 4), torch.ones(3))


def test_feedforward_shapes_and_params() -> None:
    x = torch.randn(2, 3, 8)
    assert GeluMLP(8, 32)(x).shape == x.shape
    assert SwiGLU(8, 32)(x).shape == x.shape
    assert sum(p.numel() for p in GeluMLP(8, 32).parameters()) == 2 * 8 * 32 + 32 + 8
    assert sum(p.numel() for p in SwiGLU(8, 32).parameters()) == 3 * 8 * 32
    with pytest.raises(ValueError, match="relu2"):
        build_feedforward("relu2", 8, 32)


def test_layernorm_without_centering_keeps_the_mean_and_the_correct_one_removes_it() -> None:
    """Planted bug norm.layernorm-no-centering (both directions)."""
    from transformer_math.bugs import plant

    x = torch.randn(8, 16, dtype=torch.float64) + 3.0
    good = layer_norm(x)
    assert float(good.mean(-1).abs().max()) < 1e-12
    assert torch.allclose(good, torch.nn.functional.layer_norm(x, (16,)), atol=1e-12)
    with plant("norm.layernorm-no-centering"):
        bad = layer_norm(x)
        module = LayerNorm(16).double()(x)
    assert float(bad.mean(-1).abs().min()) > 1.0 and torch.equal(bad, module)


def test_identity_norm() -> None:
    norm = build_norm("none", 4)
    x = torch.randn(2, 4)
    assert torch.equal(norm(x), x) and sum(p.numel() for p in norm.parameters()) == 0
