"""predicted_parameter_count equals the parameters of Transformer(config) for many configs."""

from __future__ import annotations

import itertools

import pytest

from transformer_math.nn.attention import count_parameters
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import Transformer
from transformer_math.theory.parameter_count import (
    head_parameter_count,
    position_parameter_count,
    predicted_parameter_count,
)

GRID = list(itertools.product(
    ["layernorm", "rmsnorm", "rmsnorm_hf"],
    ["gelu", "gelu_tanh", "swiglu"],
    ["pre", "post"],
    [True, False],  # biases
))

EXTRA = [
    {"vocab_size": 11, "tie_embeddings": True},
    {"vocab_size": 11, "head_bias": True, "position": "sinusoidal"},
    {"input_size": 3, "output_size": 1, "position": "relative", "relative_window": 5},
    {"input_size": 3, "output_size": 0, "position": "local_relative"},
    {"position": "rope", "num_kv_heads": 2, "head_dim": 6},
    {"position": "alibi", "num_kv_heads": 1},
    {"cross_attention": True, "output_size": 0, "causal": False},
    {"cross_attention": True, "vocab_size": 7, "num_kv_heads": 2},
    {"sublayers": "attention_only", "vocab_size": 5},
    {"sublayers": "ffn_only", "vocab_size": 5, "intermediate_size": 24},
    {"vocab_size": 9, "final_norm": False},
    {"vocab_size": 9, "norm_placement": "post", "final_norm": True},
]


@pytest.mark.parametrize(("norm", "ffn", "placement", "bias"), GRID)
def test_grid_of_norms_feedforwards_and_biases(norm: str, ffn: str, placement: str,
                                               bias: bool) -> None:
    cfg = TransformerConfig(hidden_size=16, num_heads=4, num_layers=2, vocab_size=13,
                            max_seq_len=10, norm=norm, feedforward=ffn, norm_placement=placement,
                            attention_bias=bias, mlp_bias=bias, head_bias=bias)
    model = Transformer(cfg)
    assert count_parameters(model) == predicted_parameter_count(cfg)
    assert model.parameter_breakdown()["total"] == predicted_parameter_count(cfg)


@pytest.mark.parametrize("kwargs", EXTRA)
def test_inputs_positions_heads_gqa_cross_attention(kwargs: dict) -> None:
    cfg = TransformerConfig(hidden_size=24, num_heads=4, num_layers=3, max_seq_len=12, **kwargs)
    model = Transformer(cfg)
    parts = model.parameter_breakdown()
    assert parts["total"] == count_parameters(model) == predicted_parameter_count(cfg)
    assert parts["positions"] == position_parameter_count(cfg)
    assert parts["lm_head"] == head_parameter_count(cfg)


def test_gpt2_small_is_124m() -> None:
    """Radford et al. 2019 (HF gpt2): 124,439,808 parameters, head tied to the token table."""
    cfg = TransformerConfig(hidden_size=768, num_layers=12, num_heads=12, vocab_size=50257,
                            max_seq_len=1024, feedforward="gelu_tanh", tie_embeddings=True)
    assert predicted_parameter_count(cfg) == 124_439_808


def test_counts_move_in_the_right_direction() -> None:
    """Each part the formula names changes the count: untying adds V d, GQA removes K/V."""
    base = TransformerConfig(hidden_size=16, num_heads=4, vocab_size=10, tie_embeddings=True)
    untied = TransformerConfig(hidden_size=16, num_heads=4, vocab_size=10)
    assert predicted_parameter_count(untied) - predicted_parameter_count(base) == 10 * 16
    gqa = TransformerConfig(hidden_size=16, num_heads=4, vocab_size=10, num_kv_heads=1)
    # 2 layers x (W_K, W_V and their biases) shrink from 4 to 1 head of width 4
    assert predicted_parameter_count(untied) - predicted_parameter_count(gqa) == 2 * 2 * 3 * 4 * 17
