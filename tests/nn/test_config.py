"""TransformerConfig validates every field by name before anything is allocated."""

from __future__ import annotations

import pytest

from transformer_math.nn.config import MAX_SIZE, TransformerConfig
from transformer_math.nn.transformer import Transformer, build_transformer


@pytest.mark.parametrize("changes, match", [
    ({"hidden_size": 0}, "hidden_size"),
    ({"num_layers": True}, "num_layers"),
    ({"vocab_size": MAX_SIZE + 1}, "vocab_size"),
    ({"num_heads": 3}, "must divide hidden_size"),
    ({"num_kv_heads": 3}, "num_kv_heads"),
    ({"position": "absolute"}, "position must be one of"),
    ({"norm": "batchnorm"}, "norm must be one of"),
    ({"feedforward": "relu2"}, "feedforward must be one of"),
    ({"sublayers": "attention"}, "sublayers must be one of"),
    ({"norm_placement": "sandwich"}, "norm_placement"),
    ({"attention_backend": "flash3"}, "attention_backend"),
    ({"dropout": 1.0}, "dropout"),
    ({"input_size": 3}, "not both"),
    ({"tie_embeddings": True, "output_size": 2}, "tie_embeddings"),
    ({"cross_attention": True, "sublayers": "ffn_only"}, "cross_attention"),
])
def test_bad_fields_are_named(changes, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=match):
        TransformerConfig(**{"hidden_size": 8, "num_heads": 2, "vocab_size": 5, **changes})


def test_defaults_and_presets_of_parts() -> None:
    cfg = TransformerConfig(hidden_size=8, num_heads=2, vocab_size=5, norm="rmsnorm")
    assert cfg.ffn_size == 32 and cfg.head_size == 5 and cfg.eps == 1e-6
    assert cfg.has_final_norm and not TransformerConfig(norm_placement="post").has_final_norm
    m = build_transformer(cfg, 0)
    assert isinstance(m, Transformer) and m.lm_head is not None
    assert build_transformer(TransformerConfig(hidden_size=8, num_heads=2, output_size=0),
                             0).lm_head is None


def test_same_seed_same_model_whatever_ran_before() -> None:
    import torch

    cfg = TransformerConfig(hidden_size=8, num_heads=2, vocab_size=5, init="gpt2")
    a = build_transformer(cfg, 4)
    torch.rand(3)  # the global RNG is neither read nor advanced by build_transformer
    b = build_transformer(cfg, 4)
    for (na, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert torch.equal(pa, pb), na
