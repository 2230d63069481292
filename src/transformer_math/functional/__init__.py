"""Pure tensor functions (ARCHITECTURE.md layer 1). Shapes are (batch, heads, seq, dim)."""

from transformer_math.functional.attention import (
    ATTENTION_BACKENDS,
    AttentionOutput,
    attention_logits,
    get_attention_backend,
    reference_backend,
    register_attention_backend,
    repeat_kv,
    scaled_dot_product_attention,
    sdpa_backend,
    validate_qkv,
)
from transformer_math.functional.masks import causal_mask, combine_masks
from transformer_math.functional.softmax import naive_softmax, softmax_jacobian, stable_softmax

__all__ = [
    "ATTENTION_BACKENDS",
    "AttentionOutput",
    "attention_logits",
    "causal_mask",
    "combine_masks",
    "get_attention_backend",
    "naive_softmax",
    "reference_backend",
    "register_attention_backend",
    "repeat_kv",
    "scaled_dot_product_attention",
    "sdpa_backend",
    "softmax_jacobian",
    "stable_softmax",
    "validate_qkv",
]
