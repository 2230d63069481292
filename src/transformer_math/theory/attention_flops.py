"""FLOPs of the matrix products of one multi-head self-attention forward (closed forms).

Source: the third seed's complexity table (004 "计算复杂度分析"); Vaswani et al. 2017, §3.2.2 and
Table 1. A matrix product (M x K)(K x N) costs 2 M K N floating-point operations (one multiply and
one add per term), the convention of ``torch.utils.flop_counter``. For a batch of B sequences of
n tokens, width d, H query heads of width d_k and values of width d_v:

    projections = B (3 H 2 n d d_k + 2 n (H d_v) d)   (W_Q, W_K, W_V per head; W_O)
    products    = B H (2 n^2 d_k + 2 n^2 d_v)         (Q K^T and A V per head)

With H d_k = H d_v = d this is 8 B n d^2 + 4 B n^2 d. With grouped key/value heads (H_kv < H,
Ainslie et al. 2023) W_K and W_V have H_kv heads: B (2 n d d_k (H + H_kv) + 2 n d d_v H_kv +
2 n H d_v d). Elementwise work (the softmax, the scale, bias additions) is not part of either
count.

Linear attention (000 §8.3.2 推论 3; Katharopoulos et al. 2020) with an m-dimensional feature
map computes S = phi(K)^T V (2 n m d_v), phi(Q) S (2 n m d_v) and the normaliser phi(Q) z
(2 n m) per head: B H (4 n m d_v + 2 n m), linear in n where the products above are quadratic.
"""

from __future__ import annotations


def _check_positive(**values: int) -> None:
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")


def projection_flops(batch: int, seq_len: int, dim: int, heads: int, head_dim: int,
                     value_dim: int | None = None, kv_heads: int | None = None) -> int:
    """B (2 n d d_k (H + H_kv) + 2 n d d_v H_kv + 2 n H d_v d): the Q, K, V projections (one
    d x d_k matrix per head and role; H_kv = H unless ``kv_heads``; d_v = d_k unless
    ``value_dim``) and the output projection (H d_v -> d)."""
    value_dim = head_dim if value_dim is None else value_dim
    kv_heads = heads if kv_heads is None else kv_heads
    _check_positive(batch=batch, seq_len=seq_len, dim=dim, heads=heads, head_dim=head_dim,
                    value_dim=value_dim, kv_heads=kv_heads)
    qk = (heads + kv_heads) * 2 * seq_len * dim * head_dim
    v = kv_heads * 2 * seq_len * dim * value_dim
    out = 2 * seq_len * heads * value_dim * dim
    return batch * (qk + v + out)


def attention_product_flops(batch: int, seq_len: int, heads: int, head_dim: int,
                            value_dim: int | None = None, key_len: int | None = None) -> int:
    """B H (2 n S d_k + 2 n S d_v): Q K^T and A V of every head (S = ``key_len``, default n)."""
    value_dim = head_dim if value_dim is None else value_dim
    key_len = seq_len if key_len is None else key_len
    _check_positive(batch=batch, seq_len=seq_len, heads=heads, head_dim=head_dim,
                    value_dim=value_dim, key_len=key_len)
    return batch * heads * (2 * seq_len * key_len * head_dim + 2 * seq_len * key_len * value_dim)


def linear_attention_product_flops(batch: int, seq_len: int, heads: int, feature_dim: int,
                                   value_dim: int | None = None) -> int:
    """B H (4 n m d_v + 2 n m): phi(K)^T V, phi(Q) S and phi(Q) z of non-causal linear attention
    with feature dimension m (``feature_dim``; m = d_k for elu + 1) and value width d_v."""
    value_dim = feature_dim if value_dim is None else value_dim
    _check_positive(batch=batch, seq_len=seq_len, heads=heads, feature_dim=feature_dim,
                    value_dim=value_dim)
    return batch * heads * (4 * seq_len * feature_dim * value_dim + 2 * seq_len * feature_dim)
