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


def test_one_layer_separates_all_81_sequences_refuting_the_seed() -> None:
    from transformer_math.claims.registry import Context, Size, Verdict, get_claim, run_claim

    claim = get_claim("expressivity.contextual-mapping")
    res = run_claim(claim, Context(size=Size.TINY))
    ev = res.evidence
    assert ev.verdict is Verdict.REFUTED and res.expected_met and res.falsifier_caught
    assert ev.measured["81_sequences"]["codes"] == 324
    assert ev.seed_margins and not any(m.holds for m in ev.seed_margins)
    assert {r.line for r in claim.refutes} == {739}  # 704 (multi-step reasoning) dropped, issue 31
    assert {c.line for c in claim.corrections} == {743, 750}
