"""Closed-form parameter count of a :class:`~transformer_math.nn.config.TransformerConfig`.

Notation: d = hidden_size, L = num_layers, H = num_heads, H_kv = num_kv_heads, d_k = head_dim,
d_ff = intermediate_size, V = vocab_size, T = max_seq_len, b_a / b_m / b_h = 1 when the
attention / MLP / head biases are on (0 otherwise), p = parameters per width of the norm
(LayerNorm: weight and bias, p = 2; RMSNorm: weight only, p = 1; Zhang & Sennrich 2019).

    attention  = d H d_k + 2 d H_kv d_k + H d_k d + b_a (H d_k + 2 H_kv d_k + d)
                 (W_Q, W_K, W_V, W_O; Vaswani et al. 2017 §3.2.2; grouped K/V heads: Ainslie
                 et al. 2023)
    ffn        = 2 d d_ff + b_m (d_ff + d)             (GELU MLP: W_1, W_2)
               = 3 d d_ff + b_m (2 d_ff + d)           (SwiGLU: W_g, W_1, W_2; Shazeer 2020)
    block      = [attention + p d] + [attention + p d if cross-attention] + [ffn + p d]
                 (the bracketed sublayers that ``sublayers`` keeps, each with its norm)
    total      = embedding + positions + L block + [p d final norm] + head
    embedding  = V d (tokens) | (input_size + 1) d (a linear embedding) | 0 (inputs_embeds)
    positions  = T d (learned table) | H (2 W - 1) (relative bias of window W) | 0
                 (none, sinusoidal, rope, alibi: no parameters)
    head       = d h + b_h h for a head of width h > 0 (0 when tied to the token table)

The GPT-2 small check (V = 50257, T = 1024, d = 768, L = 12, biases, tied head) gives
124,439,808 (Radford et al. 2019, the "124M" model). ``Transformer.parameter_breakdown`` must
equal this count for every configuration (``tests/theory/test_parameter_count.py``).
"""

from __future__ import annotations

from transformer_math.nn.config import SUBLAYERS, TransformerConfig
from transformer_math.nn.feedforward import FEEDFORWARDS
from transformer_math.nn.norms import NORMS


def attention_parameter_count(config: TransformerConfig) -> int:
    """W_Q, W_K, W_V, W_O and their biases of one attention layer (self or cross)."""
    d, dk = config.hidden_size, config.dim_per_head
    q, kv = config.num_heads * dk, config.kv_heads * dk
    weights = d * q + 2 * d * kv + q * d
    return weights + (q + 2 * kv + d if config.attention_bias else 0)


def feedforward_parameter_count(config: TransformerConfig) -> int:
    """The FFN of one block: ``matrices`` d x d_ff weights (2 for GELU, 3 for SwiGLU) + biases."""
    d, ff = config.hidden_size, config.ffn_size
    matrices = int(FEEDFORWARDS.metadata(config.feedforward)["matrices"])
    weights = matrices * d * ff
    return weights + ((matrices - 1) * ff + d if config.mlp_bias else 0)


def norm_parameter_count(config: TransformerConfig) -> int:
    """One normalisation layer: p d (p = 2 for LayerNorm, 1 for RMSNorm)."""
    return int(NORMS.metadata(config.norm)["params_per_dim"]) * config.hidden_size


def block_parameter_count(config: TransformerConfig) -> int:
    """One block: each kept sublayer (+ cross-attention) with its norm."""
    parts = SUBLAYERS[config.sublayers]
    norm = norm_parameter_count(config)
    total = 0
    if "attention" in parts:
        total += attention_parameter_count(config) + norm
    if config.cross_attention:
        total += attention_parameter_count(config) + norm
    if "ffn" in parts:
        total += feedforward_parameter_count(config) + norm
    return total


def embedding_parameter_count(config: TransformerConfig) -> int:
    """Token table V d, linear embedding (input_size + 1) d, or 0 (inputs already embedded)."""
    d = config.hidden_size
    if config.vocab_size is not None:
        return config.vocab_size * d
    if config.input_size is not None:
        return (config.input_size + 1) * d
    return 0


def position_parameter_count(config: TransformerConfig) -> int:
    """Learned table T d; relative bias H (2 W - 1); no parameters otherwise."""
    if config.position == "learned":
        return config.max_seq_len * config.hidden_size
    if config.position in ("relative", "local_relative"):
        return config.num_heads * (2 * config.relative_window - 1)
    return 0


def head_parameter_count(config: TransformerConfig) -> int:
    """d h + b_h h for a head of width h; 0 without a head or when tied to the token table."""
    h = config.head_size
    if h == 0 or config.tie_embeddings:
        return 0
    return config.hidden_size * h + (h if config.head_bias else 0)


def predicted_parameter_count(config: TransformerConfig) -> int:
    """Trainable parameters of ``Transformer(config)`` in closed form (module docstring)."""
    total = embedding_parameter_count(config) + position_parameter_count(config)
    total += config.num_layers * block_parameter_count(config)
    total += norm_parameter_count(config) if config.has_final_norm else 0
    return total + head_parameter_count(config)
