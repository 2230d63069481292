"""The small token models of the expressivity and computation experiments, as config presets.

Every experiment model is a :class:`transformer_math.nn.config.TransformerConfig` preset of the one
:class:`transformer_math.nn.transformer.Transformer` (ARCHITECTURE.md: a model is a function of
its config). :func:`tiny_transformer_config` is the preset these studies share: pre-LN blocks
(Xiong et al. 2020 eqs. 1-2) with a final LayerNorm, a GELU FFN of width ``ffn_mult * d``
(Vaswani et al. 2017 §3.3), PyTorch's default initialisation, and a readout with a bias:

    h_0 = E[x] (+ P(pos));  h <- h + Attn(LN h);  h <- h + FFN(LN h);  logits = W LN(h_L) + b

Components are chosen by name (000 §8.3.4 "反面": attention mixes context, the FFN is the
token-wise nonlinearity):

* ``sublayers``: ``"full"`` (attention then FFN), ``"attention_only"``, ``"ffn_only"`` (every
  token is processed alone);
* ``position``: ``"none"`` (the model is permutation equivariant, 000 §8.3.1 property (3)),
  ``"learned"`` (a table of ``max_seq_len`` rows ~ N(0, 0.02^2)), ``"sinusoidal"`` (Vaswani et
  al. 2017 §3.5), ``"relative"`` (a learned per-head logit bias b_h(clip(i - j)), a simplified
  T5 bias, Raffel et al. 2020), ``"local_relative"`` (the same bias inside a sliding window of
  ``relative_window`` offsets, -inf outside); see ``nn.position.POSITIONS``;
* ``causal``: causal or bidirectional self-attention.
"""

from __future__ import annotations

from transformer_math.bugs import declare_bug, planted
from transformer_math.nn.config import TransformerConfig

POSITION_DROPPED = declare_bug(
    "presets.position-dropped",
    "tiny_transformer_config does not forward its position argument: every model gets the "
    "config's default, a learned absolute position table",
    module=__name__,
    seen_in="a keyword that a config builder forgets to pass on (the default then wins "
    "silently); 000 §8.3.4: the no-position model is the point of the experiment",
)
SUBLAYERS_DROPPED = declare_bug(
    "presets.sublayers-dropped",
    "tiny_transformer_config does not forward its sublayers argument: every ablation arm is a "
    "full attention + FFN block",
    module=__name__,
    seen_in="ablation studies whose variants silently share one architecture because a flag "
    "was not plumbed through",
    # killed in the quick tier by this test (the quick claim expressivity.ffn-only-tokenwise was
    # retired to it, issue 31); in the full tier by expressivity.component-ablation
    test="tests/experiments/test_presets_tokenwise.py::"
    "test_sublayers_dropped_lets_the_ffn_only_arm_see_context",
)


def tiny_transformer_config(
    vocab_size: int,
    output_size: int,
    *,
    hidden_size: int = 32,
    num_heads: int = 2,
    num_layers: int = 2,
    sublayers: str = "full",
    position: str = "none",
    causal: bool = False,
    max_seq_len: int = 64,
    ffn_mult: int = 4,
    relative_window: int = 8,
    norm: str = "layernorm",
) -> TransformerConfig:
    """The config of a small token classifier / next-token model: tokens (B, T) -> logits
    (B, T, output_size). Arguments not named here keep the one config's defaults (pre-norm with
    a final norm, GELU FFN, biases everywhere, torch init); ``norm`` names the block and final
    norms (``"none"``: no normalisation at all, e.g. attention-only blocks whose only
    nonlinearity is the softmax)."""
    if isinstance(ffn_mult, bool) or not isinstance(ffn_mult, int) or ffn_mult < 1:
        raise ValueError(f"ffn_mult must be a positive int, got {ffn_mult!r}")
    extra = {}
    if not planted(POSITION_DROPPED):  # planted bug: falsifier of expressivity.no-position-*
        extra["position"] = position
    if not planted(SUBLAYERS_DROPPED):  # planted bug: falsifier of component-ablation
        extra["sublayers"] = sublayers
    return TransformerConfig(
        hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads,
        vocab_size=vocab_size, output_size=output_size, head_bias=True,
        intermediate_size=ffn_mult * hidden_size, max_seq_len=max_seq_len,
        relative_window=relative_window, norm=norm, norm_placement="pre",
        final_norm=True, feedforward="gelu", causal=causal, **extra,
    )
