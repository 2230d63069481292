"""L2-distance self-attention (Kim, Papamakarios & Mnih, "The Lipschitz Constant of
Self-Attention", ICML 2021, arXiv:2006.04710, §3).

Dot-product self-attention is not globally Lipschitz: its logits x_i W_Q W_K^T x_j^T are
quadratic in the input, and along inputs where a query row stays spread out (for instance a
token with x_i W_Q = 0, whose row is uniform) the Jacobian grows like the square of the input
scale. Kim et al. replace the inner product by a negative squared distance and tie the query and
key projections, W_K = W_Q. For head h with per-head width d_h = D / H:

    logits^h_ij = -|| x_i W_Q^h - x_j W_Q^h ||^2 / sqrt(d_h),      P^h = softmax_row(logits^h),
    f^h(X)      = P^h X A_h W_V^h,       A_h = W_Q^h (W_Q^h)^T / sqrt(d_h),
    F(X)        = [f^1(X), ..., f^H(X)] W_O,

and prove that F is Lipschitz on all of R^{N x D} (their Theorem 3.2 bounds the constant). The
tying of W_Q and W_K and the value map X A_h (rather than X alone) are what the proof uses.

Shapes follow the project convention: ``x`` is (batch, seq, D); projection matrices act on the
right (``x @ w_q``); per-head tensors are (batch, heads, seq, dim).
"""

from __future__ import annotations

import math

from torch import Tensor

from transformer_math.bugs import declare_bug, planted
from transformer_math.functional.attention import AttentionOutput
from transformer_math.functional.softmax import stable_softmax

KEY_NORM_DROPPED = declare_bug(
    "attention.l2-key-norm-dropped", "the L2 logits drop the ||k_j||^2 term of ||q_i - k_j||^2 "
    "(as if it were constant along a softmax row; ||q_i||^2 is, ||k_j||^2 is not), which leaves "
    "dot-product attention 2 q.k", module=__name__,
    seen_in="expanding ||q - k||^2 and keeping only the cross term, the usual shortcut of "
    "distance-based attention kernels")


def l2_attention_logits(q: Tensor, k: Tensor, scale: float) -> Tensor:
    """-||q_i - k_j||^2 * scale for (B, H, T, D) queries and (B, H, S, D) keys -> (B, H, T, S).

    Computed as -(||q_i||^2 - 2 q_i.k_j + ||k_j||^2) * scale, which costs one matrix product.
    """
    if q.dim() != 4 or k.dim() != 4:
        raise ValueError(
            f"q and k must have rank 4 (batch, heads, seq, dim), got {tuple(q.shape)} and "
            f"{tuple(k.shape)}"
        )
    if q.shape[-1] != k.shape[-1] or q.shape[:2] != k.shape[:2]:
        raise ValueError(
            f"q and k must share batch, heads and dim, got {tuple(q.shape)} and {tuple(k.shape)}"
        )
    q_sq = q.pow(2).sum(-1, keepdim=True)  # (B, H, T, 1)
    k_sq = k.pow(2).sum(-1).unsqueeze(-2)  # (B, H, 1, S)
    cross = q @ k.transpose(-2, -1)  # (B, H, T, S)
    if planted(KEY_NORM_DROPPED):  # planted bug: falsifier of attention.not-globally-lipschitz
        return -(q_sq - 2.0 * cross) * scale
    return -(q_sq - 2.0 * cross + k_sq) * scale


def l2_self_attention(
    x: Tensor,
    w_q: Tensor,
    w_v: Tensor,
    w_o: Tensor | None = None,
    *,
    num_heads: int,
    w_k: Tensor | None = None,
    return_weights: bool = False,
) -> AttentionOutput:
    """Kim et al.'s L2 multi-head self-attention F(X) (see the module docstring).

    Args:
        x: (B, T, D) input.
        w_q: (D, H * d_h) query projection; also the key projection unless ``w_k`` is given.
        w_v: (D, H * d_v) value projection W_V (applied after X A_h).
        w_o: optional (H * d_v, D_out) output projection.
        num_heads: H.
        w_k: optional (D, H * d_h) key projection. Kim et al.'s Lipschitz guarantee needs
            ``w_k is None`` (tied, W_K = W_Q); an untied key is allowed for comparison only.
        return_weights: also return P, shape (B, H, T, T).

    Returns ``AttentionOutput(output (B, T, H * d_v or D_out), weights or None)``.
    """
    if x.dim() != 3:
        raise ValueError(f"x must have shape (batch, seq, D), got {tuple(x.shape)}")
    b, t, d = x.shape
    if num_heads <= 0:
        raise ValueError(f"num_heads must be positive, got {num_heads}")
    for name, w in (("w_q", w_q), ("w_v", w_v), ("w_k", w_k)):
        if w is None:
            continue
        if w.dim() != 2 or w.shape[0] != d or w.shape[1] % num_heads != 0:
            raise ValueError(
                f"{name} must have shape (D={d}, num_heads * width) with num_heads={num_heads}, "
                f"got {tuple(w.shape)}"
            )
    if w_k is not None and w_k.shape != w_q.shape:
        raise ValueError(
            f"w_k must have the shape of w_q {tuple(w_q.shape)}, got {tuple(w_k.shape)}"
        )
    d_h = w_q.shape[1] // num_heads
    d_v = w_v.shape[1] // num_heads
    if w_o is not None and (w_o.dim() != 2 or w_o.shape[0] != num_heads * d_v):
        raise ValueError(
            f"w_o must have shape (num_heads * d_v = {num_heads * d_v}, D_out), "
            f"got {tuple(w_o.shape)}"
        )
    scale = 1.0 / math.sqrt(d_h)
    q = (x @ w_q).view(b, t, num_heads, d_h).transpose(1, 2)  # (B, H, T, d_h)
    k = q if w_k is None else (x @ w_k).view(b, t, num_heads, d_h).transpose(1, 2)
    weights = stable_softmax(l2_attention_logits(q, k, scale), dim=-1)  # (B, H, T, T)
    # X A_h W_V^h = (X W_Q^h) ((W_Q^h)^T W_V^h) / sqrt(d_h): one (d_h x d_v) matrix per head.
    wq_heads = w_q.view(d, num_heads, d_h).permute(1, 0, 2)  # (H, D, d_h)
    wv_heads = w_v.view(d, num_heads, d_v).permute(1, 0, 2)  # (H, D, d_v)
    value_map = wq_heads.transpose(-2, -1) @ wv_heads * scale  # (H, d_h, d_v)
    values = q @ value_map  # (B, H, T, d_v)
    heads = weights @ values  # (B, H, T, d_v)
    out = heads.transpose(1, 2).reshape(b, t, num_heads * d_v)  # (B, T, H * d_v)
    if w_o is not None:
        out = out @ w_o
    return AttentionOutput(out, weights if return_weights else None)
