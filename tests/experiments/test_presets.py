"""The experiments' preset of the one Transformer (formerly nn/tiny_transformer.py).

Components by name, permutation equivariance without positions, the position schemes, and an
ablation through a hook point (no model is edited).
"""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_math.experiments.presets import tiny_transformer_config
from transformer_math.nn.config import SUBLAYERS
from transformer_math.nn.hooks import hooks, run_with_cache
from transformer_math.nn.transformer import build_transformer

POSITIONS = ("none", "learned", "sinusoidal", "relative", "local_relative")


def test_preset_maps_the_old_fields():
    cfg = tiny_transformer_config(6, 3, hidden_size=8, num_heads=2, num_layers=3,
                                  sublayers="attention_only", position="relative", causal=True,
                                  max_seq_len=10, ffn_mult=2, relative_window=4)
    assert (cfg.hidden_size, cfg.num_layers, cfg.num_heads) == (8, 3, 2)
    assert (cfg.vocab_size, cfg.head_size, cfg.head_bias) == (6, 3, True)
    assert cfg.ffn_size == 16 and cfg.max_seq_len == 10 and cfg.relative_window == 4
    assert cfg.norm == "layernorm" and cfg.norm_placement == "pre" and cfg.has_final_norm
    assert cfg.causal and cfg.sublayers == "attention_only" and cfg.init == "torch"
    model = build_transformer(cfg, 0)
    assert model.lm_head is not None and model.lm_head.bias is not None
    assert all(layer.ffn is None for layer in model.layers)
    with pytest.raises(ValueError, match="ffn_mult"):
        tiny_transformer_config(2, 2, ffn_mult=0)


@pytest.mark.parametrize(("sublayers", "position", "causal"),
                         list(itertools.product(SUBLAYERS, POSITIONS, (False, True))))
def test_every_combination_runs_and_backpropagates(sublayers, position, causal):
    cfg = tiny_transformer_config(6, 3, hidden_size=8, num_layers=2, sublayers=sublayers,
                                  position=position, causal=causal)
    model = build_transformer(cfg, 0)
    x = torch.randint(0, 6, (2, 7), generator=torch.Generator().manual_seed(0))
    out = model(x)
    assert out.shape == (2, 7, 3)
    out.sum().backward()


def test_build_is_deterministic_given_the_seed():
    cfg = tiny_transformer_config(5, 2)
    a, b = build_transformer(cfg, 3), build_transformer(cfg, 3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), sublayers=st.sampled_from(list(SUBLAYERS)),
       layers=st.integers(1, 2))
def test_without_positions_the_model_is_permutation_equivariant(seed, sublayers, layers):
    cfg = tiny_transformer_config(4, 3, hidden_size=8, num_layers=layers, sublayers=sublayers)
    model = build_transformer(cfg, seed).double()
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
    model = build_transformer(tiny_transformer_config(2, 2, hidden_size=8,
                                                      position="sinusoidal"), 0)
    with torch.no_grad():
        y = model(torch.zeros(1, 4, dtype=torch.long))
    assert float((y[0, 0] - y[0, 1]).abs().max()) > 1e-4


def test_relative_bias_depends_only_on_offset_and_is_clipped():
    cfg = tiny_transformer_config(2, 2, hidden_size=8, position="relative", relative_window=3)
    model = build_transformer(cfg, 0)
    with torch.no_grad():
        model.relative_bias.bias.copy_(torch.arange(10.0).view(2, 5))
    bias = model.relative_bias(6, 6)[0].detach()  # (H, T, S)
    assert bias.shape == (2, 6, 6)
    assert float(bias[0, 4, 2]) == float(bias[0, 3, 1])  # same offset +2
    assert float(bias[0, 5, 0]) == float(bias[0, 4, 0])  # offsets 5 and 4 clipped to 2


def test_local_relative_masks_far_keys_in_the_attention_pattern():
    cfg = tiny_transformer_config(2, 2, hidden_size=8, num_layers=1, position="local_relative",
                                  relative_window=2)
    model = build_transformer(cfg, 0)
    _, cache = run_with_cache(model, torch.zeros(1, 5, dtype=torch.long),
                              names=["layers.0.attn.hook_pattern"])
    pattern = cache["layers.0.attn.hook_pattern"][0, 0]  # (T, S)
    assert float(pattern[4, 2]) == 0.0 and float(pattern[4, 3]) > 0.0
    assert float(pattern[2, 3]) > 0.0 and float(pattern[0, 2]) == 0.0


def test_learned_positions_refuse_long_sequences():
    model = build_transformer(tiny_transformer_config(2, 2, position="learned",
                                                      max_seq_len=4), 0)
    with pytest.raises(ValueError, match="max_seq_len=4"):
        model(torch.zeros(1, 5, dtype=torch.long))


def test_bad_configs_and_inputs_are_rejected():
    with pytest.raises(ValueError, match="sublayers must be one of"):
        tiny_transformer_config(2, 2, sublayers="mlp")
    with pytest.raises(ValueError, match="position must be one of"):
        tiny_transformer_config(2, 2, position="absolute")
    with pytest.raises(ValueError, match="num_heads"):
        tiny_transformer_config(2, 2, hidden_size=10, num_heads=4)
    with pytest.raises(ValueError, match="hidden_size must be an int"):
        tiny_transformer_config(2, 2, hidden_size=0)
    model = build_transformer(tiny_transformer_config(3, 2), 0)
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 3\)"):
        model(torch.tensor([[0, 3]]))
    with pytest.raises(ValueError, match="LongTensor"):
        model(torch.zeros(1, 2))


def test_ablating_attention_through_a_hook_removes_all_context():
    """With every attention branch replaced by zeros (``hooks``, not an edited model), each
    output depends on its own token only: the full model behaves as an FFN-only one."""
    cfg = tiny_transformer_config(4, 3, hidden_size=8, num_layers=2, sublayers="full")
    model = build_transformer(cfg, 0).double()
    x = torch.tensor([[0, 1, 2, 3], [0, 3, 3, 3]])
    with torch.no_grad():
        y = model(x)
        with hooks(model, {"layers.*.hook_attn_out": lambda t, hook: torch.zeros_like(t)}):
            ablated = model(x)
    assert float((y[0, 0] - y[1, 0]).abs().max()) > 1e-6  # context changes token 0's output
    torch.testing.assert_close(ablated[0, 0], ablated[1, 0], rtol=0, atol=1e-12)
    torch.testing.assert_close(ablated[0, 3], ablated[1, 1], rtol=0, atol=1e-12)


def test_position_and_sublayers_dropped_bugs_and_the_correct_forwarding() -> None:
    """Planted bugs presets.position-dropped / presets.sublayers-dropped (both directions)."""
    from transformer_math.bugs import plant
    from transformer_math.experiments.presets import tiny_transformer_config

    good = tiny_transformer_config(4, 4, position="none", sublayers="ffn_only", norm="none")
    assert (good.position, good.sublayers, good.norm) == ("none", "ffn_only", "none")
    with plant("presets.position-dropped"):
        assert tiny_transformer_config(4, 4, position="none").position == "learned"
    with plant("presets.sublayers-dropped"):
        assert tiny_transformer_config(4, 4, sublayers="ffn_only").sublayers == "full"
