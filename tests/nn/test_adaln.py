"""adaLN-Zero conditioning of the one Transformer (DiT, Peebles & Xie 2023 §3.2; issue 20)."""

from __future__ import annotations

import pytest
import torch

from transformer_math import bugs
from transformer_math.nn.adaln import AdaLNModulation
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import build_transformer


def _cfg(**kw) -> TransformerConfig:
    base = {"hidden_size": 16, "num_layers": 2, "num_heads": 2, "input_size": 3,
            "output_size": 0, "causal": False, "position": "learned", "max_seq_len": 6,
            "condition_size": 8}
    return TransformerConfig(**{**base, **kw})


def _inputs(b: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(b, 6, 3, generator=g), torch.randn(b, 8, generator=g)


def _perturb(model) -> None:
    g = torch.Generator().manual_seed(1)
    for module in model.modules():
        if isinstance(module, AdaLNModulation):
            torch.nn.init.normal_(module.proj.weight, 0.0, 0.3, generator=g)
            torch.nn.init.normal_(module.proj.bias, 0.0, 0.3, generator=g)


@pytest.mark.parametrize("sublayers", ["full", "attention_only", "ffn_only"])
@pytest.mark.parametrize("init", ["torch", "gpt2"])
def test_every_block_is_the_identity_at_initialisation(sublayers, init):
    """adaLN-Zero: gate = shift = scale = 0, so the output is N_f(embedding + positions)."""
    model = build_transformer(_cfg(sublayers=sublayers, init=init), 0)
    x, c = _inputs()
    out = model(inputs_embeds=x, condition=c)
    embedded = model.embed_positions(model.embed_inputs(x), torch.arange(6))
    assert torch.equal(out, model.final_norm(embedded))
    assert model.parameter_breakdown()["conditioning"] == sum(
        p.numel() for m in model.modules() if isinstance(m, AdaLNModulation)
        for p in m.parameters())


def test_the_modulation_follows_dit():
    """h + gate * f(N(h)(1 + scale) + shift) per sublayer, computed here by hand for one
    FFN-only block and compared with the model."""
    model = build_transformer(_cfg(sublayers="ffn_only", num_layers=1), 0)
    _perturb(model)
    x, c = _inputs()
    block = model.layers[0]
    h = model.embed_positions(model.embed_inputs(x), torch.arange(6))
    proj = block.adaln.proj(torch.nn.functional.silu(c))[:, None]
    shift, scale, gate = proj.chunk(3, dim=-1)
    h = h + gate * block.ffn(block.ffn_norm(h) * (1 + scale) + shift)
    fshift, fscale = model.final_adaln.proj(torch.nn.functional.silu(c))[:, None].chunk(2, -1)
    expected = model.final_norm(h) * (1 + fscale) + fshift
    torch.testing.assert_close(model(inputs_embeds=x, condition=c), expected)


def test_the_output_depends_on_the_condition_unless_the_bug_is_planted():
    model = build_transformer(_cfg(), 0)
    _perturb(model)
    x, c = _inputs()
    gap = (model(inputs_embeds=x, condition=c) - model(inputs_embeds=x, condition=-c)).abs()
    assert float(gap.max()) > 0.1
    with bugs.plant("nn.adaln-condition-ignored"):
        same = (model(inputs_embeds=x, condition=c)
                - model(inputs_embeds=x, condition=-c)).abs()
    assert float(same.max()) == 0.0


def test_condition_is_checked():
    model = build_transformer(_cfg(), 0)
    x, c = _inputs()
    for bad in (None, c[:, :5], c[:2], c.long(), torch.full_like(c, float("nan"))):
        with pytest.raises(ValueError, match="condition"):
            model(inputs_embeds=x, condition=bad)
    plain = build_transformer(_cfg(condition_size=None), 0)
    with pytest.raises(ValueError, match="condition"):
        plain(inputs_embeds=x, condition=c)


def test_config_validates_condition_size():
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="condition_size"):
            _cfg(condition_size=bad)
    with pytest.raises(ValueError, match="condition_size"):
        _cfg(norm_placement="post")
    assert _cfg().weight_count > _cfg(condition_size=None).weight_count
