"""Peak-memory measurement (diagnostics.memory): an n x n tile is seen, small tiles are not."""

from __future__ import annotations

import pytest
import torch

from transformer_math.diagnostics.memory import measure_attention_memory, peak_memory_of
from transformer_math.functional.tiled_attention import tiled_attention


def test_peak_memory_sees_an_n_by_n_tile_and_not_small_tiles() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 4096, 16, generator=g) for _ in range(3))
    matrix = 4096 * 4096 * 4
    with torch.no_grad():
        _, small, _ = peak_memory_of(lambda: tiled_attention(q, k, v, block_q=64, block_k=64))
        _, whole, _ = peak_memory_of(lambda: tiled_attention(q, k, v, block_q=4096, block_k=4096))
    assert small < 0.1 * matrix <= matrix <= whole


@pytest.mark.slow
def test_subprocess_measurement() -> None:
    m = measure_attention_memory("tiled", 512, head_dim=16)
    assert m.peak_bytes < m.matrix_bytes and m.seconds > 0 and m.output_bytes == 512 * 16 * 4
    with pytest.raises(ValueError, match="backend"):
        measure_attention_memory("flash3", 512)
