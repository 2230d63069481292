"""TinyTransformer: components by name, equivariance without positions, position schemes."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_math.nn.tiny_transformer import (
    ATTENTION,
    BLOCKS,
    POSITIONS,
    TinyTransformerConfig,
    build_tiny_transformer,
)


@pytest.mark.parametrize(("block", "positions", "attention"),
                         list(itertools.product(BLOCKS, POSITIONS, ATTENTION)))
def test_every_combination_runs_and_backpropagates(block, positions, attention):
    cfg = TinyTransformerConfig(vocab_size=6, num_outputs=3, embed_dim=8, num_layers=2,
                                block=block, positions=positions, attention=attention)
    model = build_tiny_transformer(cfg, 0)
    x = torch.randint(0, 6, (2, 7), generator=torch.Generator().manual_seed(0))
    out = model(x)
    assert out.shape == (2, 7, 3)
    out.sum().backward()


def test_build_is_deterministic_given_the_seed():
    cfg = TinyTransformerConfig(vocab_size=5, num_outputs=2)
    a, b = build_tiny_transformer(cfg, 3), build_tiny_transformer(cfg, 3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), block=st.sampled_from(BLOCKS), layers=st.integers(1, 2))
def test_without_positions_the_model_is_permutation_equivariant(seed, block, layers):
    cfg = TinyTransformerConfig(vocab_size=4, num_outputs=3, embed_dim=8, num_layers=layers,
                                block=block, positions="none")
    model = build_tiny_transformer(cfg, seed).double()
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 4, (3, 9), generator=g)
    perm = torch.randperm(9, generator=g)
    with torch.no_grad():
        y, y_perm = model(x), model(x[:, perm])
    torch.testing.assert_close(y_perm, y[:, perm], rtol=0, atol=1e-12)
    same = x[:, :, None] == x[:, None, :]
    gap = (y[:, :, None] - y[:, None, :]).abs().amax(-1)[same].max()
    assert float(gap) <= 1e-12


def test_positions_break_equal_token_symmetry():
    cfg = TinyTransformerConfig(vocab_size=2, num_outputs=2, embed_dim=8, positions="sinusoidal")
    model = build_tiny_transformer(cfg, 0)
    with torch.no_grad():
        y = model(torch.zeros(1, 4, dtype=torch.long))
    assert float((y[0, 0] - y[0, 1]).abs().max()) > 1e-4


def test_relative_bias_depends_only_on_offset_and_is_clipped():
    cfg = TinyTransformerConfig(vocab_size=2, num_outputs=2, embed_dim=8, positions="relative",
                                relative_window=3)
    model = build_tiny_transformer(cfg, 0)
    with torch.no_grad():
        model.positions.bias.copy_(torch.arange(10.0).view(2, 5))
    bias = model.positions.attention_bias(6, 6)[0].detach()  # (H, T, S)
    assert bias.shape == (2, 6, 6)
    assert float(bias[0, 4, 2]) == float(bias[0, 3, 1])  # same offset +2
    assert float(bias[0, 5, 0]) == float(bias[0, 4, 0])  # offsets 5 and 4 clipped to 2


def test_learned_positions_refuse_long_sequences():
    cfg = TinyTransformerConfig(vocab_size=2, num_outputs=2, positions="learned", max_len=4)
    model = build_tiny_transformer(cfg, 0)
    with pytest.raises(ValueError, match="max_len=4"):
        model(torch.zeros(1, 5, dtype=torch.long))


def test_bad_configs_and_inputs_are_rejected():
    with pytest.raises(ValueError, match="block must be one of"):
        TinyTransformerConfig(vocab_size=2, num_outputs=2, block="mlp")
    with pytest.raises(ValueError, match="positions must be one of"):
        TinyTransformerConfig(vocab_size=2, num_outputs=2, positions="rope")
    with pytest.raises(ValueError, match="num_heads"):
        TinyTransformerConfig(vocab_size=2, num_outputs=2, embed_dim=10, num_heads=4)
    with pytest.raises(ValueError, match="embed_dim must be a positive int"):
        TinyTransformerConfig(vocab_size=2, num_outputs=2, embed_dim=0)
    model = build_tiny_transformer(TinyTransformerConfig(vocab_size=3, num_outputs=2), 0)
    with pytest.raises(ValueError, match=r"tokens must lie in \[0, 3\)"):
        model(torch.tensor([[0, 3]]))
    with pytest.raises(ValueError, match="integer tensor"):
        model(torch.zeros(1, 2))


def test_local_relative_masks_far_keys():
    cfg = TinyTransformerConfig(vocab_size=2, num_outputs=2, embed_dim=8,
                                positions="local_relative", relative_window=2)
    model = build_tiny_transformer(cfg, 0)
    bias = model.positions.attention_bias(5, 5)[0].detach()
    assert torch.isinf(bias[0, 4, 2]) and torch.isfinite(bias[0, 4, 3])
    assert torch.isfinite(bias[0, 2, 3]) and torch.isinf(bias[0, 0, 2])
