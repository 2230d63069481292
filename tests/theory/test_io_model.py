"""IO model of standard and tiled attention (Dao et al. 2022, Theorem 2)."""

from __future__ import annotations

import pytest

from transformer_math.theory.io_model import (
    standard_attention_io,
    tile_sizes_for_sram,
    tile_working_set,
    tiled_attention_io,
)


def test_io_model() -> None:
    n, d = 1024, 64
    assert standard_attention_io(n, d).total == 4 * n * d + 4 * n * n
    bq, bk = tile_sizes_for_sram(100_000, d)
    assert tile_working_set(bq, bk, d) <= 100_000
    small, large = tiled_attention_io(n, d, 16, 16), tiled_attention_io(n, d, 128, 64)
    assert large.total < standard_attention_io(n, d).total < small.total
    assert (
        tiled_attention_io(n, d, 64, 64, is_causal=True).total
        < tiled_attention_io(n, d, 64, 64).total
    )
    with pytest.raises(ValueError, match="sram_elements"):
        tile_sizes_for_sram(10, d)
