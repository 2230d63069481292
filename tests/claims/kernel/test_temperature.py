"""claims.kernel.temperature and its falsifier attention.scale-as-temperature (planted in
functional/attention.py; its unit test lives here with the claim that owns it)."""

import torch

from transformer_math.bugs import plant
from transformer_math.functional.attention import scaled_dot_product_attention

F64 = torch.float64


def test_scale_as_temperature_bug_divides_the_logits():
    """With the bug an explicit scale beta divides the logits (softmax(s / beta)); the correct
    attention multiplies them (softmax(beta s))."""
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 1, 3, 4, generator=g, dtype=F64)
    k = torch.randn(1, 1, 5, 4, generator=g, dtype=F64)
    v = torch.randn(1, 1, 5, 2, generator=g, dtype=F64)
    s = q @ k.transpose(-2, -1)
    good = scaled_dot_product_attention(q, k, v, scale=4.0, return_weights=True).weights
    assert torch.allclose(good, torch.softmax(4.0 * s, dim=-1), atol=1e-12)
    with plant("attention.scale-as-temperature"):
        bad = scaled_dot_product_attention(q, k, v, scale=4.0, return_weights=True).weights
    assert torch.allclose(bad, torch.softmax(s / 4.0, dim=-1), atol=1e-12)
