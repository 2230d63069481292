"""expressivity.contextual-mapping: codes from x + Attn(x), both directions."""

from __future__ import annotations

import torch

from transformer_math.claims.expressivity.contextual_mapping import (
    code_distances,
    contextual_codes,
)

SEQUENCES = ["aa", "ab", "ba", "bb"]
IDS = torch.tensor([[0, 0], [0, 1], [1, 0], [1, 1]])


def test_attention_separates_equal_tokens_in_different_contexts():
    codes = contextual_codes(IDS, 8, "attention", torch.Generator().manual_seed(0))
    assert codes.shape == (4, 2, 8) and codes.dtype == torch.float64
    d = code_distances(codes.reshape(8, 8), SEQUENCES)
    assert d["min_same_token_position"] > 1e-3 * d["median"]


def test_without_attention_equal_tokens_at_equal_positions_coincide():
    codes = contextual_codes(IDS, 8, "none", torch.Generator().manual_seed(0))
    d = code_distances(codes.reshape(8, 8), SEQUENCES)
    assert d["min_same_token_position"] == 0.0 and d["min"] == 0.0
