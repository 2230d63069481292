"""The functional scaled_dot_product_attention returns a NamedTuple, and says so (issue 38.7):
code written for torch's function, which returns a tensor, needs ``out, _ = ...``."""

from __future__ import annotations

import torch

from transformer_math.functional.attention import AttentionOutput, scaled_dot_product_attention


def test_the_return_value_is_the_documented_named_pair() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 3, 4, generator=g) for _ in range(3))
    result = scaled_dot_product_attention(q, k, v)
    assert isinstance(result, AttentionOutput) and not isinstance(result, torch.Tensor)
    out, weights = result
    assert out is result.output and out.shape == (1, 2, 3, 4) and weights is None
    assert scaled_dot_product_attention(q, k, v, return_weights=True).weights.shape == (1, 2, 3, 3)
    doc = scaled_dot_product_attention.__doc__ or ""
    assert "NamedTuple" in doc and "not a tensor" in doc and "AttentionOutput" in doc
    assert "not a\n    tensor" in (AttentionOutput.__doc__ or "")
