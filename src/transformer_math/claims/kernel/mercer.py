"""The attention kernel is not a Mercer kernel, and 1 + q.k is not an attention kernel.

Sources: the main seed 000 §8.3.2 (theory A continued, RKHS view, 000:474-480; exercise 8.3.2-2,
000:534); the seed itself says the scores are asymmetric (000:199, 000:390). Mercer's theorem
needs a symmetric positive semi-definite kernel; Nadaraya-Watson weights are a weighted average
only for a nonnegative kernel (Katharopoulos et al. 2020 §3.2 require phi >= 0 for that reason).

``kernel.kernel-audit``:
- kappa(x, x') = exp((x W_Q)(x' W_K)^T / sqrt(d_k)) with W_Q != W_K: its Gram matrix on n points
  is not symmetric (kappa(x, x') != kappa(x', x)), so it has no Mercer expansion
  <phi(x), phi(x')>; its eigenvalues are complex in general. With tied W_K = W_Q it is
  exp of a PSD bilinear form, hence symmetric PSD (Schur product theorem, term by term in the
  Taylor series).
- kappa(q, k) = 1 + q.k (phi(x) = [1, x]) is signed: Nadaraya-Watson weights can be negative and
  the normaliser sum_j (1 + q.k_j) = n + q.(sum_j k_j) vanishes on the hyperplane of queries
  q.(sum_j k_j) = -n, where the "average" blows up.
"""

from __future__ import annotations

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Refutation,
    at_least,
    at_most,
    claim,
    decide,
    exceeds,
)
from transformer_math.nn import MultiHeadAttention
from transformer_math.nn.hooks import run_with_cache
from transformer_math.nn.init import seeded
from transformer_math.nn.kernel_regression import (
    LinearKernel,
    SoftmaxAttentionKernel,
    nadaraya_watson,
    nadaraya_watson_weights,
)

F64 = torch.float64


def _gram_audit(ctx: Context) -> dict[str, float]:
    """Gram matrices of one head's kernel (``SoftmaxAttentionKernel.from_attention``) on n = 12
    points, untied (the module's own W_K) and tied (W_K := W_Q), and the agreement of the untied
    Gram with exp of the module's logits (its ``hook_scores``, one forward)."""
    gen = ctx.generator(474)
    d, d_k, n = 8, 4, 12
    module = seeded(lambda: MultiHeadAttention(d, 1, head_dim=d_k, bias=False,
                                               backend="reference"), gen).to(F64).eval()
    x = torch.randn(n, d, generator=gen, dtype=F64)
    with torch.no_grad():
        untied = SoftmaxAttentionKernel.from_attention(module, 0)
        gram = untied(x, x)
        tied = SoftmaxAttentionKernel(untied.w_q, untied.w_q)(x, x)
        _, cache = run_with_cache(module, x[None], names=["hook_scores"])
        scores = cache["hook_scores"][0, 0]
    eig = torch.linalg.eigvals(gram)
    tied_eig = torch.linalg.eigvalsh(0.5 * (tied + tied.T))
    return {
        "untied_relative_asymmetry": float((gram - gram.T).abs().max() / gram.abs().max()),
        "untied_max_imag_eigenvalue": float(eig.imag.abs().max() / eig.abs().max()),
        "gram_vs_module_logits": float((gram.log() - scores).abs().max()),
        "tied_relative_asymmetry": float((tied - tied.T).abs().max() / tied.abs().max()),
        "tied_min_eigenvalue_relative": float(tied_eig.min() / tied_eig.max()),
    }


def _linear_kernel_audit(ctx: Context) -> dict[str, float]:
    """Nadaraya-Watson with kappa = 1 + q.k (``LinearKernel(1.0)``) for N(0, I_d) queries and
    keys: the share of negative weights, the row sums, and the normaliser and output along the
    ray q(t) = t u with u = -s/|s|, s = sum_j k_j, through the point t* = n/|s| where the
    normaliser n - t |s| vanishes."""
    gen = ctx.generator(534)
    d, n, t = 8, 16, 32
    kernel = LinearKernel(1.0)
    q = torch.randn(t, d, generator=gen, dtype=F64)
    k = torch.randn(n, d, generator=gen, dtype=F64)
    v = torch.randn(n, 3, generator=gen, dtype=F64)
    w = nadaraya_watson_weights(q, k, kernel)
    s = k.sum(0)
    u = -s / s.norm()
    t_star = n / float(s.norm())
    ray = torch.stack([(t_star * (1 + e)) * u for e in (-1e-6, 1e-6)])
    den = kernel(ray, k).sum(-1)
    out = nadaraya_watson(ray, k, v, kernel)
    return {
        "negative_weight_share": float((w < 0).to(F64).mean()),
        "min_weight": float(w.min()),
        "max_row_sum_error": float((w.sum(-1) - 1).abs().max()),
        "normaliser_ratio_across_t_star": float(den[0] / den[1]),
        "output_norm_near_t_star": float(out.norm(dim=-1).min()),
        "max_abs_value": float(v.abs().max()),
    }


@claim(
    "kernel.kernel-audit",
    source="000 §8.3.2 theory A (RKHS view) and exercise 8.3.2-2; Mercer's theorem; "
    "Katharopoulos et al. 2020 §3.2",
    statement="""The attention kernel exp((x W_Q)(x' W_K)^T / sqrt(d_k)) with W_Q != W_K is not
    symmetric (its Gram matrix has complex eigenvalues), so it is not a Mercer kernel and not a
    normalised Gaussian kernel; with tied W_K = W_Q it is symmetric positive semi-definite. The
    linear kernel 1 + q.k of exercise 8.3.2-2 is signed: its Nadaraya-Watson weights go negative
    and its normaliser vanishes on a hyperplane of queries.""",
    falsifier="kernel-regression.normalise-over-queries",
    expected="refuted",
    version=1,
    seed_refs=[("000", 474, 480), ("000", 534, 534)],
    refutes=[
        Refutation("000", 474, "标准 softmax 注意力本质上对应一个高斯核 ... 高斯核的全部 RKHS 理论"
                   "都适用于 softmax 注意力",
                   "with W_Q != W_K the attention kernel is not symmetric, so it is neither a "
                   "Gaussian kernel nor any Mercer kernel; the RKHS theory applies to tied "
                   "W_Q = W_K (and, for the Gaussian form, equal key norms: 000:472)"),
        Refutation("000", 480, "Mercer 定理保证：只要核对称半正定（指数内积核满足）",
                   "the attention kernel is an exponential of the bilinear form x W_Q W_K^T x'; "
                   "it is symmetric PSD only for tied W_Q = W_K; measured: asymmetric Gram "
                   "matrix with complex eigenvalues"),
        Refutation("000", 534, "φ(x) = [1, x_1, ..., x_d]（即线性核 κ(q,k) = 1 + q^T k）作为"
                   "线性注意力的特征映射",
                   "1 + q.k is signed: attention weights go negative and the normaliser "
                   "sum_j (1 + q.k_j) vanishes for q.(sum_j k_j) = -n, where the output blows "
                   "up; linear attention needs phi >= 0 (elu + 1, relu, positive features)"),
    ],
    statement_zh="""W_Q != W_K 时注意力核 exp((x W_Q)(x' W_K)^T / sqrt(d_k)) 不对称（其 Gram 矩阵有
    复特征值），因此不是 Mercer 核，也不是归一化的高斯核；W_K = W_Q 绑定时它对称半正定。
    练习 8.3.2-2 的线性核 1 + q.k 有正有负：其 Nadaraya-Watson 权重会变负，归一化分母在查询空间的
    一个超平面上为零。""",
)
def check_kernel_audit(ctx: Context) -> Evidence:
    """Gram matrices from ``nn.kernel_regression.SoftmaxAttentionKernel`` read off a seeded
    ``MultiHeadAttention`` (one head, d = 8, d_k = 4, float64), cross-checked against exp of the
    module's own logits; the linear kernel through ``nadaraya_watson_weights`` and
    ``nadaraya_watson``.

    Margins: untied Gram relative asymmetry >= 1e-3 and relative imaginary part of its
    eigenvalues >= 1e-6 (generic weights); |log Gram - module logits| <= 1e-10; tied Gram
    asymmetry <= 1e-12 and min eigenvalue >= 1e-12 of the largest (positive definite, in
    decades); linear kernel: some weight negative (share >= 1%), rows sum to 1 within 1e-10
    (signed weights still sum to 1), the normaliser changes sign across t* (ratio < 0) and the
    output near t* exceeds 1e3 max|v| (4e4-2e5 over seeds 0-4).
    Seed margins: 000:474/480 (a Mercer, Gaussian-type kernel: symmetric) untied asymmetry
    <= 1e-12; 000:534 (a weighted average) min weight >= 0.
    """
    gram = _gram_audit(ctx)
    lin = _linear_kernel_audit(ctx)
    margins = [
        exceeds("W_Q != W_K: relative asymmetry of the Gram matrix",
                gram["untied_relative_asymmetry"], 1e-3),
        exceeds("W_Q != W_K: relative imaginary part of the Gram eigenvalues",
                gram["untied_max_imag_eigenvalue"], 1e-6),
        at_most("max |log Gram - module logits|", gram["gram_vs_module_logits"], 1e-10),
        at_most("W_K = W_Q: relative asymmetry of the Gram matrix",
                gram["tied_relative_asymmetry"], 1e-12),
        # positive definite (exp(q.k) with tied weights is a strictly positive definite kernel
        # on distinct points), compared in decades: the ratio is 1e-4..2e-3 over seeds 0-4
        exceeds("W_K = W_Q: min eigenvalue / max eigenvalue (positive definite)",
                gram["tied_min_eigenvalue_relative"], 1e-12),
        exceeds("1 + q.k: share of negative Nadaraya-Watson weights",
                lin["negative_weight_share"], 1e-2),
        at_most("1 + q.k: max |row sum of the weights - 1|", lin["max_row_sum_error"], 1e-10),
        at_most("1 + q.k: normaliser at t*(1 - 1e-6) / normaliser at t*(1 + 1e-6) (< 0: "
                "sign change)", lin["normaliser_ratio_across_t_star"], 0.0),
        exceeds("1 + q.k: |output| next to t* / max |v|",
                lin["output_norm_near_t_star"] / lin["max_abs_value"], 1e3),  # 4e4-2e5, seeds 0-4
    ]
    seed_margins = [
        at_most("000:474/480 symmetric (Mercer, Gaussian-type) kernel: untied Gram asymmetry",
                gram["untied_relative_asymmetry"], 1e-12),
        at_least("000:534 1 + q.k gives a weighted average: min weight", lin["min_weight"], 0.0),
    ]
    return Evidence(
        predicted={"untied asymmetry": "> 0", "tied asymmetry": 0.0, "tied min eigenvalue": ">= 0",
                   "1 + q.k min weight": "< 0", "normaliser": "changes sign at t*"},
        measured={"untied asymmetry": gram["untied_relative_asymmetry"],
                  "untied max |Im lambda| / |lambda|": gram["untied_max_imag_eigenvalue"],
                  "tied asymmetry": gram["tied_relative_asymmetry"],
                  "tied min / max eigenvalue": gram["tied_min_eigenvalue_relative"],
                  "1 + q.k min weight": lin["min_weight"],
                  "1 + q.k negative share": lin["negative_weight_share"]},
        tolerance="asymmetry >= 1e-3 (untied) and <= 1e-12 (tied, float64); see the margins",
        verdict=decide(margins, seed_margins),
        notes=[
            "Gram matrices of one head on 12 points (d = 8, d_k = 4): the module's own W_K "
            "(untied) and W_K := W_Q (tied); the untied Gram equals exp of the module's logits "
            "(hook_scores), a second computation of the same kernel.",
            "Tied: exp(x W_Q W_Q^T x' / sqrt(d_k)) = sum_m (x M x')^m / m! with M PSD, a sum of "
            "PSD kernels (Schur products), so PSD; untied: kappa(x, x') != kappa(x', x).",
            "1 + q.k: 32 queries, 16 keys, N(0, I_8); along q(t) = -t s/|s| (s = sum_j k_j) the "
            "normaliser n - t |s| crosses 0 at t* = n/|s|.",
        ],
        details={"gram": gram, "linear_kernel": lin},
        margins=margins,
        seed_margins=seed_margins,
    )
