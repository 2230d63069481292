"""Pure tensor functions (ARCHITECTURE.md layer 1). Shapes are (batch, heads, seq, dim).

Importing this package registers every attention backend: ``reference`` and ``sdpa``
(``attention.py``), ``tiled`` (``tiled_attention.py``) and ``linear`` (``linear_attention.py``).
"""

# Backend modules register themselves on import (Hugging Face-style registry).
from transformer_math.functional import linear_attention, tiled_attention  # noqa: F401
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
