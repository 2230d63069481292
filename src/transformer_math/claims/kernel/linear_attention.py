"""Causal linear attention is an RNN (000 §8.3.2 corollary 3; Katharopoulos et al. 2020 §3.4).

``kernel.linear-attention-rnn``: the parallel form (explicit masked kernel matrix), the
recurrent form (S += phi(k) v^T, z += phi(k), out = phi(q)^T S / phi(q)^T z) and the chunked
O(n)-memory form of ``functional.linear_attention`` agree for elu+1, relu and positive random
features, with and without a prefix of cached keys.

``kernel.linear-attention-kernel-regression``: non-causal linear attention in its O(n) factorised
form phi(q)^T S / phi(q)^T z is the Nadaraya-Watson estimate with the kernel phi(q)^T phi(k)
(``nn.kernel_regression.FeatureMapKernel``): "a different kernel, not a cheaper approximation"
(000 §8.3.2 corollary 3).
"""

from __future__ import annotations

import math

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    at_most,
    claim,
    decide,
)
from transformer_math.functional.linear_attention import (
    FEATURE_MAPS,
    draw_random_projection,
    linear_attention,
    linear_attention_parallel,
    linear_attention_recurrent,
    positive_random_features,
)
from transformer_math.nn.kernel_regression import FeatureMapKernel, nadaraya_watson

F64 = torch.float64


# --------------------------------------------------------------------------------------------
@claim(
    "kernel.linear-attention-rnn",
    source="000 §8.3.2 corollary 3, exercise 8.3.2-2; Katharopoulos et al. 2020 §3.4",
    statement="""Causal linear attention in parallel form (explicit masked kernel matrix) equals
    its recurrent form (S += phi(k) v^T, z += phi(k), out = phi(q)^T S / phi(q)^T z) and the
    chunked O(n)-memory form, for elu+1, relu and positive random features.""",
    falsifier="linear-attention.read-before-write",
    expected="verified",
    version=2,
    seed_refs=[("000", 456, 460), ("000", 534, 534)],
)
def check_linear_attention_rnn(ctx: Context) -> Evidence:
    """max |parallel - recurrent| and |parallel - chunked| <= 1e-12 (float64).

    Version 2 (issue 14): the falsifier is the planted bug linear-attention.read-before-write
    in ``functional.linear_attention`` (was a keyword of the check); the check is unchanged.
    """
    batch, heads, t, extra, d, d_v, m = 2, 2, 24, 6, 8, 5, 32
    g = ctx.generator(4)
    q = torch.randn(batch, heads, t, d, generator=g, dtype=F64)
    k = torch.randn(batch, heads, t + extra, d, generator=g, dtype=F64)
    v = torch.randn(batch, heads, t + extra, d_v, generator=g, dtype=F64)
    proj = draw_random_projection(d, m, generator=g, dtype=F64)
    errors: dict[str, float] = {}
    for fm, p in (("elu", None), ("relu", None), ("favor", proj)):
        for offset in (0, extra):  # offset > 0: queries are the last positions (cached decoding)
            kk, vv = k[:, :, extra - offset :], v[:, :, extra - offset :]
            par = linear_attention_parallel(q, kk, vv, feature_map=fm, causal=True, projection=p)
            rec = linear_attention_recurrent(q, kk, vv, feature_map=fm, projection=p)
            chunk = linear_attention(
                q, kk, vv, feature_map=fm, causal=True, projection=p, chunk_size=5
            )
            errors[f"{fm}/offset{offset}/recurrent"] = float((par.output - rec).abs().max())
            errors[f"{fm}/offset{offset}/chunked"] = float((par.output - chunk).abs().max())
    worst = max(errors.values())
    tol = 1e-12
    margins = [at_most("max |parallel - recurrent or chunked|", worst, tol)]
    return Evidence(
        predicted=0.0,
        measured=worst,
        tolerance=tol,
        verdict=decide(margins),
        margins=margins,
        notes=[
            "max |parallel - recurrent| and |parallel - chunked(c=5)| over three feature maps, "
            "with and without a prefix of cached keys (bottom-right causal alignment), float64.",
            f"The recurrent state has m*d_v + m = {m * d_v + m} numbers for 'favor' whatever "
            "the length; tolerance 1e-12 covers float64 round-off of sums of <= 30 terms.",
        ],
        details={"errors": errors},
    )



# --------------------------------------------------------------------------------------------
@claim(
    "kernel.linear-attention-kernel-regression",
    source="000 §8.3.2 corollary 3 and the contrast that follows it (线性注意力是换了一个核); "
    "Katharopoulos et al. 2020 eq. 4-6",
    statement="""Non-causal linear attention in its O(n) factorised form phi(q)^T S / phi(q)^T z
    (S = sum_j phi(k_j) v_j^T, z = sum_j phi(k_j)) is exactly the Nadaraya-Watson estimate with
    the kernel kappa(q, k) = phi(q)^T phi(k), for elu+1, relu and positive random features.""",
    falsifier="linear-attention.no-normaliser",
    expected="verified",
    version=1,
    seed_refs=[("000", 456, 462)],
)
def check_linear_attention_kernel_regression(ctx: Context) -> Evidence:
    """max |linear_attention(q, k, v) - NW(q, k, v; phi(q)^T phi(k))| <= 1e-12 (float64).

    The two sides share only the feature map: the library's O(n) form never builds the n x n
    kernel, the regressor of ``nn.kernel_regression`` builds it explicitly and normalises its
    rows. For "favor" the regressor's features are positive_random_features(sqrt(scale) x)
    without the library's per-row stabilisers (constant factors that cancel in the ratio).
    """
    batch, heads, t, s, d, d_v, m = 2, 2, 12, 20, 8, 5, 32
    g = ctx.generator(9)
    q = torch.randn(batch, heads, t, d, generator=g, dtype=F64)
    k = torch.randn(batch, heads, s, d, generator=g, dtype=F64)
    v = torch.randn(batch, heads, s, d_v, generator=g, dtype=F64)
    proj = draw_random_projection(d, m, generator=g, dtype=F64)
    root = math.sqrt(1.0 / math.sqrt(d))  # favor estimates exp(q.k / sqrt(d)): x -> sqrt(scale) x
    errors: dict[str, float] = {}
    for fm in ("elu", "relu", "favor"):
        if fm == "favor":
            fast = linear_attention(q, k, v, feature_map=fm, causal=False, projection=proj)

            def phi(x: torch.Tensor) -> torch.Tensor:
                return positive_random_features(x * root, proj)
        else:
            fast = linear_attention(q, k, v, feature_map=fm, causal=False)
            fn = FEATURE_MAPS[fm]
            assert fn is not None
            phi = fn
        nw = nadaraya_watson(q, k, v, FeatureMapKernel(phi))
        errors[fm] = float((fast - nw).abs().max())
    worst = max(errors.values())
    tol = 1e-12  # float64 round-off of sums of <= 20 positive terms, outputs of order 1
    margins = [at_most("max |linear attention - Nadaraya-Watson with phi(q).phi(k)|", worst, tol)]
    return Evidence(
        predicted=0.0,
        measured=worst,
        tolerance=tol,
        verdict=decide(margins),
        margins=margins,
        notes=[
            f"{batch}x{heads} heads, {t} queries, {s} keys, d = {d}, d_v = {d_v}, m = {m} "
            "random features; float64. relu rows whose features are all zero get 0 on both "
            "sides (the project's convention).",
            "Tolerance 1e-12: round-off only; the sides differ in the order of summation.",
        ],
        details={"errors": errors},
    )
