"""torch.nn modules built on ``functional`` (ARCHITECTURE.md layer 2)."""

from transformer_math.nn.attention import KVCache, MultiHeadAttention, count_parameters

__all__ = ["KVCache", "MultiHeadAttention", "count_parameters"]
