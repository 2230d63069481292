"""TransformerConfig bounds the weights its sizes imply (``MAX_PARAMETERS``), not only each
size field (``MAX_SIZE``): per-field-legal sizes cannot combine into an absurd allocation."""

from __future__ import annotations

import pytest

from transformer_math.nn.config import MAX_PARAMETERS, MAX_SIZE, TransformerConfig


@pytest.mark.parametrize("sizes", [
    {"hidden_size": MAX_SIZE, "num_layers": MAX_SIZE, "num_heads": 1},
    {"hidden_size": 64, "num_heads": MAX_SIZE, "head_dim": MAX_SIZE},
    {"hidden_size": MAX_SIZE, "num_heads": 1, "vocab_size": MAX_SIZE, "num_layers": 1},
    {"hidden_size": MAX_SIZE, "num_heads": 1, "max_seq_len": MAX_SIZE, "num_layers": 1,
     "intermediate_size": 1},
])
def test_sizes_implying_too_many_weights_are_refused(sizes):
    with pytest.raises(ValueError, match="more than MAX_PARAMETERS"):
        TransformerConfig(**sizes)


def test_real_model_sizes_are_accepted():
    """Llama 3.1 405B (4.05e11 parameters) is below the bound; nothing is allocated."""
    llama405 = TransformerConfig(
        hidden_size=16384, num_layers=126, num_heads=128, num_kv_heads=8,
        intermediate_size=53248, vocab_size=128256, max_seq_len=131072, position="rope",
        feedforward="swiglu", norm="rmsnorm")
    assert 4.0e11 < llama405.weight_count < MAX_PARAMETERS
    tiny = TransformerConfig(hidden_size=8, num_layers=1, num_heads=2, vocab_size=5,
                             intermediate_size=16, max_seq_len=4)
    # embedding 5*8 + positions 4*8 + head 5*8 + q,k,v,out 4*64 + ffn 2*8*16
    assert tiny.weight_count == 40 + 32 + 40 + 256 + 256
