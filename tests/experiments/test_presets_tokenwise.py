"""experiments.presets: an FFN-only stack is token-wise, attention carries context.

Issue 31: this was the claim ``expressivity.ffn-only-tokenwise``; an FFN-only model is token-wise
by definition, so the check is a test of the preset plumbing (``sublayers`` forwarded to the one
Transformer). With the planted bug ``presets.sublayers-dropped`` every arm is a full block and the
FFN-only arm sees the other tokens.
"""

from __future__ import annotations

import torch

from transformer_math.bugs import plant
from transformer_math.experiments.presets import tiny_transformer_config
from transformer_math.nn.config import SUBLAYERS
from transformer_math.nn.transformer import build_transformer


def _effects() -> dict[str, float]:
    """Per sublayer kind: max |change of output 0| / max(1, output scale) when every token but
    the first is redrawn (random float64 models, 2 layers, d = 16, no positions)."""
    g = torch.Generator().manual_seed(41)
    vocab, n = 4, 6
    x = torch.randint(0, vocab, (32, n), generator=g)
    x2 = x.clone()
    x2[:, 1:] = torch.randint(0, vocab, (32, n - 1), generator=g)
    x2[:, 1] = (x[:, 1] + 1) % vocab  # at least one other token differs
    effect: dict[str, float] = {}
    for i, sublayers in enumerate(SUBLAYERS):
        cfg = tiny_transformer_config(vocab, 4, hidden_size=16, num_heads=2, num_layers=2,
                                      sublayers=sublayers, position="none", max_seq_len=n)
        model = build_transformer(cfg, i).double()
        with torch.no_grad():
            y, y2 = model(x), model(x2)
        effect[sublayers] = float((y2[:, 0] - y[:, 0]).abs().max()) / max(
            1.0, float(y.abs().max()))
    return effect


def test_ffn_only_is_tokenwise_and_attention_carries_context() -> None:
    effect = _effects()
    assert effect["ffn_only"] <= 1e-12  # float64 rounding: the same arithmetic at position 0
    assert effect["attention_only"] >= 1e-3
    assert effect["full"] >= 1e-3


def test_sublayers_dropped_lets_the_ffn_only_arm_see_context() -> None:
    with plant("presets.sublayers-dropped"):
        effect = _effects()
    assert effect["ffn_only"] >= 1e-3
