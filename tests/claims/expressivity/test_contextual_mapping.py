"""expressivity.contextual-mapping: codes from the project's Transformer, both directions."""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.claims.expressivity.contextual_mapping import (
    code_distances,
    code_model,
    contextual_codes,
)

SEQUENCES = ["aa", "ab", "ba", "bb"]
IDS = torch.tensor([[0, 0], [0, 1], [1, 0], [1, 1]])


def test_attention_separates_equal_tokens_in_different_contexts() -> None:
    model = code_model(8, torch.Generator().manual_seed(0))
    codes = contextual_codes(model, IDS)
    assert codes.shape == (4, 2, 8) and codes.dtype == torch.float64
    d = code_distances(codes.reshape(8, 8), SEQUENCES)
    assert d["min_same_token_position"] > 1e-3 * d["median"]


def test_codes_are_x_plus_attention() -> None:
    model = code_model(8, torch.Generator().manual_seed(0))
    with torch.no_grad():
        x = model.embed(IDS, None, torch.arange(2))
        attn = model.layers[0].attn
        assert attn is not None
        expected = x + attn(x, is_causal=False)
    assert torch.allclose(contextual_codes(model, IDS), expected, atol=1e-12)


def test_with_the_padding_mask_inverted_equal_tokens_at_equal_positions_coincide() -> None:
    model = code_model(8, torch.Generator().manual_seed(0))
    with plant("transformer.padding-mask-inverted"):
        codes = contextual_codes(model, IDS)
    d = code_distances(codes.reshape(8, 8), SEQUENCES)
    assert d["min_same_token_position"] == 0.0
