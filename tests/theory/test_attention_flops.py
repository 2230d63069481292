"""theory.attention_flops: the closed forms against FlopCounterMode on MultiHeadAttention."""

from __future__ import annotations

import pytest
import torch

from transformer_math.diagnostics import count_flops
from transformer_math.functional import scaled_dot_product_attention
from transformer_math.nn import MultiHeadAttention
from transformer_math.nn.init import seeded
from transformer_math.theory.attention_flops import (
    attention_product_flops,
    linear_attention_product_flops,
    projection_flops,
)


def test_equal_widths_give_8_n_d2_plus_4_n2_d():
    b, n, d, h = 3, 10, 24, 4
    assert projection_flops(b, n, d, h, d // h) == 8 * b * n * d * d
    assert attention_product_flops(b, n, h, d // h) == 4 * b * n * n * d


@pytest.mark.parametrize(("batch", "n", "d", "heads", "head_dim"),
                         [(1, 16, 32, 4, 8), (2, 9, 24, 3, 8), (1, 12, 16, 2, 12)])
def test_counts_match_flop_counter_on_the_reference_backend(batch, n, d, heads, head_dim):
    mha = seeded(lambda: MultiHeadAttention(d, heads, head_dim=head_dim, backend="reference"),
                 0).eval()
    x = torch.randn(batch, n, d, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ops = count_flops(mha, x).by_operator
    assert ops.get("aten.addmm", 0) + ops.get("aten.mm", 0) == projection_flops(
        batch, n, d, heads, head_dim)
    assert ops.get("aten.bmm", 0) + ops.get("aten.baddbmm", 0) == attention_product_flops(
        batch, n, heads, head_dim)
    # the other direction: a formula that forgets the heads misses the measurement
    assert attention_product_flops(batch, n, 1, head_dim) != attention_product_flops(
        batch, n, heads, head_dim)


def test_cross_attention_key_length_and_bad_arguments():
    assert attention_product_flops(1, 4, 2, 8, key_len=10) == 2 * (2 * 4 * 10 * 8 * 2)
    with pytest.raises(ValueError, match="seq_len must be an int >= 1"):
        projection_flops(1, 0, 8, 2, 4)
    with pytest.raises(ValueError, match="heads must be an int >= 1"):
        attention_product_flops(1, 4, True, 8)


def test_grouped_kv_heads_and_linear_attention_match_flop_counter():
    b, n, d, h, h_kv = 2, 10, 32, 8, 2
    d_k = d // h
    gqa = seeded(lambda: MultiHeadAttention(d, h, num_kv_heads=h_kv, backend="reference"),
                 0).eval()
    x = torch.randn(b, n, d, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ops = count_flops(gqa, x).by_operator
        q, k, v = gqa.project_qkv(x, x, x)
        linear = count_flops(lambda: scaled_dot_product_attention(q, k, v, backend="linear"))
    predicted = projection_flops(b, n, d, h, d_k, kv_heads=h_kv)
    assert ops.get("aten.addmm", 0) + ops.get("aten.mm", 0) == predicted
    assert predicted < projection_flops(b, n, d, h, d_k)  # fewer K, V heads: less work
    assert linear.by_operator.get("aten.bmm", 0) == linear_attention_product_flops(b, n, h, d_k)
    assert linear_attention_product_flops(1, 2 * n, 1, d_k) == 2 * linear_attention_product_flops(
        1, n, 1, d_k)  # linear in n, unlike the softmax products
    assert attention_product_flops(1, 2 * n, 1, d_k) == 4 * attention_product_flops(1, n, 1, d_k)
