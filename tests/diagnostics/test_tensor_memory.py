"""diagnostics.tensor_memory: a deterministic peak of the bytes a call allocates."""

from __future__ import annotations

import torch

from transformer_math.diagnostics.tensor_memory import peak_tensor_bytes
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.tiled_attention import tiled_attention


def test_counts_fresh_results_not_inputs_views_or_in_place():
    x = torch.ones(1000)  # 4000 bytes that exist before the call: not counted
    assert peak_tensor_bytes(lambda: x.view(10, 100).t())[1] == 0
    _, peak = peak_tensor_bytes(lambda: (x * 2).sum())
    assert peak == 4000 + 4  # x * 2 is alive while its sum is made

    def in_place() -> torch.Tensor:
        y = x * 2
        y.add_(1).mul_(3)  # in-place: no new storage
        return y

    assert peak_tensor_bytes(in_place)[1] == 4000


def test_a_view_keeps_its_storage_alive():
    x = torch.ones(1000)

    def keep_view() -> torch.Tensor:
        y = x * 2
        v = y[:10]  # a view of y: y's 4000 bytes stay alive after y itself is dropped
        del y
        return v * 1  # 40 more bytes while v (and so y's storage) lives

    assert peak_tensor_bytes(keep_view)[1] == 4000 + 40


def test_attention_paths_deterministic_and_ordered():
    g = torch.Generator().manual_seed(0)
    n, d = 1024, 16
    q, k, v = (torch.randn(1, 1, n, d, generator=g) for _ in range(3))
    matrix = n * n * 4
    with torch.no_grad():
        runs = [peak_tensor_bytes(lambda: tiled_attention(q, k, v, block_q=64, block_k=64))[1]
                for _ in range(3)]
        torch.randn(5000)  # whatever runs in between
        runs.append(peak_tensor_bytes(lambda: tiled_attention(q, k, v, block_q=64,
                                                              block_k=64))[1])
        one_tile = peak_tensor_bytes(lambda: tiled_attention(q, k, v, block_q=n, block_k=n))[1]
        reference = peak_tensor_bytes(
            lambda: scaled_dot_product_attention(q, k, v, backend="reference"))[1]
    assert len(set(runs)) == 1
    assert runs[0] < 0.1 * matrix  # O(n d + block^2)
    assert one_tile >= matrix and reference >= 2 * matrix  # logits and weights are n x n
