"""architecture.encoder_decoder: two Transformers, masking measured in both directions."""

from __future__ import annotations

import torch

from transformer_math.claims.architecture.encoder_decoder import (
    _masking_effects,
    _seed_call_outcomes,
    encoder_decoder_configs,
)
from transformer_math.nn.transformer import build_transformer


def _models():  # type: ignore[no-untyped-def]
    enc_cfg, dec_cfg = encoder_decoder_configs(dim=16, num_heads=2, num_layers=1)
    assert not enc_cfg.causal and dec_cfg.causal and dec_cfg.cross_attention
    assert enc_cfg.head_size == dec_cfg.head_size == 0
    return build_transformer(enc_cfg, 0).eval(), build_transformer(dec_cfg, 1).eval()


def test_masked_source_does_not_leak_and_real_source_is_seen() -> None:
    e = _masking_effects(*_models(), torch.Generator().manual_seed(0))
    assert e.causal_leak < 1e-6 and e.pad_leak < 1e-6
    assert e.future_effect > 1e-3 and e.real_effect > 1e-3
    assert e.memory_shape == (2, 7, 16) and e.output_shape == (2, 6, 16)


def test_dropped_source_mask_leaks() -> None:
    from transformer_math.bugs import plant

    with plant("transformer.cross-attention-mask-dropped"):
        e = _masking_effects(*_models(), torch.Generator().manual_seed(0))
    assert e.pad_leak > 1e-3 and e.causal_leak < 1e-6


def test_seed_calls_fail_with_the_seed_signature() -> None:
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    outcomes = _seed_call_outcomes(x, memory, torch.tril(torch.ones(3, 3)),
                                   torch.ones(2, 1, 1, 4))
    assert len(outcomes) == 3 and all(v != "ran" for v in outcomes.values())
