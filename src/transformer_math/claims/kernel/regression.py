"""Attention is kernel regression (000 §8.3.2 theory A): two exact identities in float64.

- ``kernel.nadaraya-watson``: a ``MultiHeadAttention`` head's output is the Nadaraya-Watson
  estimate with kappa(x, x') = exp((x W_Q)(x' W_K)^T / sqrt(d_k)) and labels v_j (Tsai et al.
  2019).
- ``kernel.gaussian-equivalence``: with equal key norms, softmax(q.k / s^2) rows are the
  normalised Gaussian-kernel rows exp(-|q - k|^2 / 2 s^2).
"""

from __future__ import annotations

import math

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    agreement,
    all_hold,
    at_most,
    claim,
)
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.init import seeded
from transformer_math.nn.kernel_regression import (
    GaussianKernel,
    LinearKernel,
    SoftmaxAttentionKernel,
    nadaraya_watson,
    nadaraya_watson_weights,
)

F64 = torch.float64


def _nadaraya_watson_heads(mha: MultiHeadAttention, x: torch.Tensor, kernel: str) -> torch.Tensor:
    """W_O concat_h NW_h(x): every head of ``mha`` as an explicit kernel regression.

    Head h: labels y_j = x_j W_V^(h) + b_V^(h), kernel ``SoftmaxAttentionKernel`` of head h
    (``kernel="softmax-attention"``) or the linear kernel 1 + x.x' (the falsifier).
    """
    d_k = mha.head_dim
    per_head = []
    for h in range(mha.num_heads):
        kern = (
            SoftmaxAttentionKernel.from_attention(mha, h)
            if kernel == "softmax-attention"
            else LinearKernel(1.0)
        )
        wv = mha.v_proj.weight[h * d_k : (h + 1) * d_k]
        bv = mha.v_proj.bias[h * d_k : (h + 1) * d_k]
        values = x @ wv.T + bv  # labels y_j = v_j
        per_head.append(nadaraya_watson(x, x, values, kern))  # (B, n, d_k)
    return mha.out_proj(torch.cat(per_head, dim=-1))


# --------------------------------------------------------------------------------------------
@claim(
    "kernel.nadaraya-watson",
    source="000 §8.3.2 theory A (boxed kernel); Tsai et al. 2019",
    statement="""Each attention head's output equals the Nadaraya-Watson estimate with kernel
    kappa(x, x') = exp((x W_Q)(x' W_K)^T / sqrt(d_k)) and labels v_j, computed as an explicit
    kernel regression (an identity, not an analogy).""",
    falsifier=Falsifier(
        "linear kernel",
        {"kernel": "linear"},
        "NW with kappa = 1 + q.k (the kernel of phi(x) = [1, x]) in place of the exponential",
    ),
)
def check_nadaraya_watson(ctx: Context, kernel: str = "softmax-attention") -> Evidence:
    d, heads, n, batch = 16, 4, 12, 3
    mha = seeded(lambda: MultiHeadAttention(d, heads, backend="reference"), ctx.generator(0)
                 ).to(F64)
    x = torch.randn(batch, n, d, generator=ctx.generator(1), dtype=F64)
    with torch.no_grad():
        measured_out = mha(x)  # (B, n, d): the module's forward pass
        nw_out = _nadaraya_watson_heads(mha, x, kernel)
    d_k = mha.head_dim
    err = float((measured_out - nw_out).abs().max())
    scale = float(measured_out.abs().max())
    tol = 1e-10
    margins = [at_most("max |attention - Nadaraya-Watson|", err, tol)]
    return Evidence(
        predicted=0.0,
        measured=err,
        tolerance=tol,
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            f"max |MultiHeadAttention(x) - W_O concat_h NW_h(x)| over {batch}x{n}x{d} outputs "
            f"(float64, output scale {scale:.2f}); kernel = {kernel}.",
            "Tolerance 1e-10: both sides are float64; they differ only in the order of "
            "summation and the max subtraction of the softmax (round-off ~1e-15 relative).",
        ],
        details={"heads": heads, "head_dim": d_k, "seq_len": n},
    )


# --------------------------------------------------------------------------------------------
@claim(
    "kernel.gaussian-equivalence",
    source="000 §8.3.2 theory A (RKHS: softmax kernel = normalised Gaussian kernel)",
    statement="""When all keys have the same norm, softmax(q.k / s^2) rows equal the normalised
    Gaussian-kernel rows exp(-|q - k|^2 / 2 s^2): the factors exp(-|q|^2/2s^2) and
    exp(-|k|^2/2s^2) cancel in the row normalisation.""",
    falsifier=Falsifier(
        "unequal key norms",
        {"equal_key_norms": False},
        "keys with norms spread over [0.5, 1.5]: the exp(-|k|^2/2s^2) factor no longer cancels",
    ),
)
def check_gaussian_equivalence(ctx: Context, equal_key_norms: bool = True) -> Evidence:
    n, t, d, bandwidth = 20, 10, 8, 0.7
    g = ctx.generator(3)
    k = torch.randn(n, d, generator=g, dtype=F64)
    k = k / k.norm(dim=-1, keepdim=True)
    if not equal_key_norms:
        k = k * (0.5 + torch.rand(n, 1, generator=g, dtype=F64))
    q = torch.randn(t, d, generator=g, dtype=F64) / math.sqrt(d)
    v = torch.randn(n, 3, generator=g, dtype=F64)
    out = scaled_dot_product_attention(
        q[None, None], k[None, None], v[None, None], scale=1.0 / bandwidth**2, return_weights=True
    )
    assert out.weights is not None
    measured = out.weights[0, 0]
    predicted = nadaraya_watson_weights(q, k, GaussianKernel(bandwidth))
    err = float((measured - predicted).abs().max())
    tol = 1e-12
    margins = [at_most("max |softmax weights - Gaussian kernel weights|", err, tol)]
    return Evidence(
        predicted=0.0,
        measured=err,
        tolerance=tol,
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            "max |softmax attention weights - normalised Gaussian kernel weights| in float64; "
            "the Gaussian side uses explicit differences q - k (nn.kernel_regression).",
            "Tolerance 1e-12: float64 exponentials of logits below ~10 in magnitude.",
            f"equal_key_norms = {equal_key_norms}; bandwidth s = {bandwidth} (beta = 1/s^2).",
        ],
    )

