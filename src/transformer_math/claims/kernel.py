"""Claims of 000 §8.3.2: attention as kernel regression, linear attention, set functions.

Every check measures the project's implementation (``MultiHeadAttention``,
``scaled_dot_product_attention``, ``functional.linear_attention``, ``nn.sets``) and compares it
with a prediction computed another way (the explicit Nadaraya-Watson regressor of
``nn.kernel_regression``, closed-form limits and bounds, Performer's variance formula).
"""

from __future__ import annotations

import itertools
import math

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Figure,
    Series,
    Size,
    Tier,
    agreement,
    all_hold,
    at_least,
    at_most,
    claim,
)
from transformer_math.diagnostics.attention_stats import mean_attention_entropy
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.linear_attention import (
    draw_random_projection,
    linear_attention,
    linear_attention_parallel,
    linear_attention_recurrent,
    positive_random_features,
)
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.init import seeded
from transformer_math.nn.kernel_regression import (
    GaussianKernel,
    LinearKernel,
    SoftmaxAttentionKernel,
    nadaraya_watson,
    nadaraya_watson_weights,
)
from transformer_math.nn.sets import DeepSets, SetAttentionBlock, SetTransformer

F64 = torch.float64


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
        measured_out = mha(x).output  # (B, n, d): the module's forward pass
        d_k = mha.head_dim
        per_head = []
        for h in range(heads):
            kern = (
                SoftmaxAttentionKernel.from_attention(mha, h)
                if kernel == "softmax-attention"
                else LinearKernel(1.0)
            )
            wv = mha.v_proj.weight[h * d_k : (h + 1) * d_k]
            bv = mha.v_proj.bias[h * d_k : (h + 1) * d_k]
            values = x @ wv.T + bv  # labels y_j = v_j
            per_head.append(nadaraya_watson(x, x, values, kern))  # (B, n, d_k)
        nw_out = mha.out_proj(torch.cat(per_head, dim=-1))
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
    "kernel.temperature-bandwidth",
    source="000 §8.3.2 corollary 2 (温度 = 带宽); exercise 8.3.2-1",
    statement="""The inverse temperature beta is an inverse bandwidth: beta -> inf gives the
    value of the arg-max key (nearest neighbour), beta -> 0 the mean of V, and the attention
    entropy falls monotonically as beta grows (dH/dbeta = -beta Var_a(s) <= 0).""",
    falsifier=Falsifier(
        "beta used as a bandwidth",
        {"beta_role": "bandwidth"},
        "logits divided by beta instead of multiplied (temperature and bandwidth confused)",
    ),
)
def check_temperature_bandwidth(ctx: Context, beta_role: str = "inverse-bandwidth") -> Evidence:
    n, d, d_v, t = 16, 8, 4, 8
    g = ctx.generator(2)
    q = torch.randn(1, 1, t, d, generator=g, dtype=F64)
    k = torch.randn(1, 1, n, d, generator=g, dtype=F64)
    v = torch.randn(1, 1, n, d_v, generator=g, dtype=F64)
    s = (q @ k.transpose(-2, -1))[0, 0]  # raw scores (t, n)
    betas = [10.0**e for e in torch.linspace(-3, 3, 25).tolist()]

    def attend(beta: float) -> tuple[torch.Tensor, torch.Tensor]:
        scale = beta if beta_role == "inverse-bandwidth" else 1.0 / beta
        out = scaled_dot_product_attention(q, k, v, scale=scale, return_weights=True)
        assert out.weights is not None
        return out.output[0, 0], out.weights

    entropies = [mean_attention_entropy(attend(b)[1]) for b in betas]
    vmax = float(v.abs().max())
    # beta -> inf: nearest neighbour; bound 2 max|v| (n-1) exp(-beta * gap) per query
    hi = betas[-1]
    out_hi, _ = attend(hi)
    top2 = s.topk(2, dim=-1).values
    gap = top2[:, 0] - top2[:, 1]
    nn_values = v[0, 0][s.argmax(dim=-1)]
    err_hi = (out_hi - nn_values).abs().amax(dim=-1)
    bound_hi = 2 * vmax * (n - 1) * torch.exp(-hi * gap)
    # beta -> 0: mean of V; bound (exp(beta R) - 1) max|v|, R = score range of the row
    lo = betas[0]
    out_lo, _ = attend(lo)
    err_lo = (out_lo - v[0, 0].mean(dim=0)).abs().amax(dim=-1)
    score_range = s.amax(-1) - s.amin(-1)
    bound_lo = (torch.exp(lo * score_range) - 1) * vmax
    steps = [b - a for a, b in itertools.pairwise(entropies)]
    # beta -> inf: err and bound both underflow to 0 for well-separated queries, so the
    # condition is kept as a difference; beta -> 0: the bound is > 0, kept as a ratio.
    # monotone: no step may raise the entropy by more than float64 round-off (1e-12). The
    # decreases span 40 orders of magnitude (rows saturate at large beta), so the largest step
    # is a near-zero number whose spread between seeds dwarfs 1e-12: the margin counts the
    # violating steps instead (0 for every seed; 24 of 24 for the falsifier).
    rises = sum(1 for st in steps if st > 1e-12)
    margins = [
        at_most("number of beta steps raising the entropy by > 1e-12", rises, 0),
        at_most("max (error - bound) at beta = 1e3", float((err_hi - bound_hi).max()), 1e-12),
        at_most("max error / bound at beta = 1e-3", float((err_lo / bound_lo).max()), 1.0),
    ]
    fig = Figure(
        title="Attention entropy vs inverse temperature beta (bandwidth h = 1/sqrt(beta))",
        xlabel="beta",
        ylabel="mean row entropy (nats)",
        series=[Series("measured (reference attention)", betas, entropies, style="o-")],
        logx=True,
        hlines=[(math.log(n), "log n: uniform (mean of V)"), (0.0, "0: arg-max (nearest)")],
    )
    return Evidence(
        predicted={"beta_inf": "arg-max value", "beta_0": "mean of V", "entropy": "decreasing"},
        measured={
            "max_err_beta_1e3": float(err_hi.max()),
            "max_err_beta_1e-3": float(err_lo.max()),
            "max_entropy_increase": max(steps),
            "entropy_range": [entropies[0], entropies[-1]],
        },
        tolerance={
            "beta_1e3": "2 max|v| (n-1) exp(-beta gap) per query",
            "beta_1e-3": "(exp(beta R) - 1) max|v| per query",
            "monotone": 1e-12,
        },
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            "Both limits are checked against explicit bounds derived from the softmax, not a "
            "hand-picked tolerance: at beta the arg-max weight is >= 1 - (n-1) exp(-beta gap), "
            "and every weight lies in [exp(-beta R)/n, exp(beta R)/n].",
            "Margins (issue 12): monotonicity is the number of steps that raise the entropy by "
            "more than 1e-12 (must be 0; the largest step is a near-zero decrease whose size "
            "varies by 1e-6 between seeds, so it cannot carry a margin against 1e-12); the "
            "beta = 1e3 limit is max(error - bound) (both underflow to 0 for separated rows); "
            "the beta = 1e-3 limit is max(error / bound) <= 1.",
            f"beta_role = {beta_role}.",
        ],
        figures=[fig],
        details={"min_gap": float(gap.min()), "bound_hi_max": float(bound_hi.max())},
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


# --------------------------------------------------------------------------------------------
@claim(
    "kernel.linear-attention-rnn",
    source="000 §8.3.2 corollary 3, exercise 8.3.2-2; Katharopoulos et al. 2020 §3.4",
    statement="""Causal linear attention in parallel form (explicit masked kernel matrix) equals
    its recurrent form (S += phi(k) v^T, z += phi(k), out = phi(q)^T S / phi(q)^T z) and the
    chunked O(n)-memory form, for elu+1, relu and positive random features.""",
    falsifier=Falsifier(
        "read before write",
        {"read_before_write": True},
        "the recurrence reads the state before adding the current token (off by one)",
    ),
)
def check_linear_attention_rnn(ctx: Context, read_before_write: bool = False) -> Evidence:
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
            rec = linear_attention_recurrent(
                q, kk, vv, feature_map=fm, projection=p, read_before_write=read_before_write
            )
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
        verdict=agreement(all_hold(margins)),
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
    "kernel.random-features",
    source="000 §8.3.2 (RKHS: finite phi approximates the softmax kernel); Choromanski et al. "
    "2021 (Performer) Lemma 1-2",
    statement="""Positive random features phi(x) = exp(w^T x - |x|^2/2)/sqrt(m) estimate the
    softmax kernel exp(q.k) without bias, with relative RMS error sqrt((exp|q+k|^2 - 1)/m) ~
    m^(-1/2); sharper (lower-temperature) kernels need more features.""",
    falsifier=Falsifier(
        "no norm correction",
        {"norm_correction": False},
        "phi(x) = exp(w^T x)/sqrt(m): biased by exp((|q|^2 + |k|^2)/2), error stops shrinking",
    ),
)
def check_random_features(ctx: Context, norm_correction: bool = True) -> Evidence:
    d, pairs = 16, 64
    tiny = ctx.size is Size.TINY
    ms = [16, 64, 256, 1024] if tiny else [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    redraws = 32 if tiny else 64
    betas = [0.125, 0.25, 0.5]
    g = ctx.generator(5)
    q = torch.randn(pairs, d, generator=g, dtype=F64)
    k = torch.randn(pairs, d, generator=g, dtype=F64)
    q = q / q.norm(dim=-1, keepdim=True)
    k = k / k.norm(dim=-1, keepdim=True)
    measured: dict[float, list[float]] = {}
    predicted: dict[float, list[float]] = {}
    bias_z: dict[float, float] = {}
    bias: dict[float, float] = {}
    for bi, beta in enumerate(betas):
        qs, ks = q * math.sqrt(beta), k * math.sqrt(beta)
        exact = torch.exp((qs * ks).sum(-1))
        var_factor = torch.exp((qs + ks).pow(2).sum(-1)) - 1.0  # Performer Lemma 2
        measured[beta], predicted[beta] = [], []
        for mi, m in enumerate(ms):
            rel = []
            for _ in range(redraws):
                w = draw_random_projection(d, m, generator=g, orthogonal=False, dtype=F64)
                est = (
                    positive_random_features(qs, w, norm_correction=norm_correction)
                    * positive_random_features(ks, w, norm_correction=norm_correction)
                ).sum(-1)
                rel.append(est / exact - 1.0)
            rel_t = torch.stack(rel)  # (redraws, pairs)
            measured[beta].append(float(rel_t.pow(2).mean().sqrt()))
            predicted[beta].append(float((var_factor / m).mean().sqrt()))
            if mi == len(ms) - 1:  # unbiasedness at the largest m: mean relative error
                mean = rel_t.mean()
                se = rel_t.std() / math.sqrt(rel_t.numel())
                bias[beta] = float(mean)
                bias_z[beta] = float(mean / se)
        ctx.report_progress((bi + 1) / len(betas))
    # log-log slope of measured RMS error vs m (least squares)
    slopes = {}
    for beta in betas:
        lx = torch.log(torch.tensor(ms, dtype=F64))
        ly = torch.log(torch.tensor(measured[beta], dtype=F64))
        lx_c = lx - lx.mean()
        slopes[beta] = float((lx_c * (ly - ly.mean())).sum() / (lx_c * lx_c).sum())
    ratio = {
        b: max(abs(mv / pv - 1.0) for mv, pv in zip(measured[b], predicted[b], strict=True))
        for b in betas
    }
    sharper_ratio = min(
        measured[b2][i] / measured[b1][i]
        for b1, b2 in itertools.pairwise(betas)
        for i in range(len(ms))
    )
    sharper_needs_more = sharper_ratio > 1.0
    bias_tol = 0.02
    margins = [
        at_most("max |slope + 1/2| over beta", max(abs(v + 0.5) for v in slopes.values()), 0.1),
        at_most("max |RMS / Performer formula - 1|", max(ratio.values()), 0.25),
        at_most(f"max |mean relative error| at m = {ms[-1]}",
                max(abs(v) for v in bias.values()), bias_tol),
        at_least("min RMS ratio between successive beta", sharper_ratio, 1.0),
    ]
    series = []
    for b in betas:
        xs = [float(m) for m in ms]
        series.append(Series(f"measured, beta={b}", xs, measured[b], style="o-"))
        series.append(Series(f"Performer formula, beta={b}", xs, predicted[b], style="--"))
    fig = Figure(
        title="Positive random features: relative RMS error of the softmax kernel vs m",
        xlabel="number of random features m",
        ylabel="relative RMS error",
        series=series,
        logx=True,
        logy=True,
    )
    features_for_10pct = {
        str(b): math.ceil(float((torch.exp(b * (q + k).pow(2).sum(-1)) - 1).mean()) / 0.01)
        for b in betas
    }
    return Evidence(
        predicted={"slope": -0.5, "bias": 0.0, "rms_vs_formula": 0.0},
        measured={
            "slopes": {str(b): round(s, 4) for b, s in slopes.items()},
            "bias": {str(b): round(z, 5) for b, z in bias.items()},
            "bias_z": {str(b): round(z, 3) for b, z in bias_z.items()},
            "max_rel_dev_from_formula": {str(b): round(r, 4) for b, r in ratio.items()},
        },
        tolerance={"slope": 0.1, "bias": bias_tol, "rms_vs_formula": 0.25},
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            f"{pairs} unit-norm (q, k) pairs in d={d}, kernel exp(beta q.k), {redraws} "
            "independent redraws of an iid Gaussian projection per m.",
            "Tolerances: the slope is fitted over a 64-256x range of m from Monte-Carlo RMS "
            "values whose own relative error is ~10-20% (heavy-tailed lognormal estimates), "
            "hence +-0.1 on the slope and 25% on the ratio to Performer's variance formula; "
            f"Bias: |mean relative error| at m = {ms[-1]} <= {bias_tol}, pooled over "
            f"{redraws} x {pairs} estimates (its standard error is ~0.002, so {bias_tol} is "
            "~10 standard errors; the falsifier's bias is exp(beta) - 1 >= 0.133).",
            "Changed for issue 12: the bias test was a z-score (|z| <= 4) at m = 64, a statistic "
            "whose spread between seeds is ~1 by construction, so its margin could never be "
            "three times the spread; now an absolute bias at the largest m, and 32 (was 10) "
            "redraws at size tiny to steady the slope and formula ratio.",
            f"Sharper kernels need more features: at every m the error grows with beta "
            f"({sharper_needs_more}); features for 10% RMS error: {features_for_10pct}.",
            f"norm_correction = {norm_correction}.",
        ],
        figures=[fig],
        details={
            "m": ms,
            "measured": {str(b): v for b, v in measured.items()},
            "predicted": {str(b): v for b, v in predicted.items()},
        },
    )


# --------------------------------------------------------------------------------------------
def _sinusoidal_code(n: int, dim: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/dim)), PE[pos, 2i+1] = cos(...) (Vaswani et al.)."""
    pos = torch.arange(n, dtype=F64).unsqueeze(1)
    i = torch.arange(dim, dtype=F64).unsqueeze(0)
    angle = pos / torch.pow(10000.0, (2 * torch.div(i, 2, rounding_mode="floor")) / dim)
    return torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle))


@claim(
    "kernel.set-invariance",
    source="000 §8.3.2 theory B (Deep Sets theorem, Set Transformer PMA), troubleshooting #3",
    statement="""Deep Sets (sum, mean, max pooling) and the Set Transformer (SAB + PMA) are
    permutation invariant and SAB is permutation equivariant; adding a position code to the
    elements breaks both.""",
    falsifier=Falsifier(
        "position code added",
        {"position_code": True},
        "a sinusoidal position code added to each element according to its slot",
    ),
)
def check_set_invariance(ctx: Context, position_code: bool = False) -> Evidence:
    batch, n, dim = 4, 10, 4
    g_init = ctx.generator(0)
    models = {
        "deepsets-sum": seeded(lambda: DeepSets(dim, 32, 3, pooling="sum"), g_init),
        "deepsets-mean": seeded(lambda: DeepSets(dim, 32, 3, pooling="mean"), g_init),
        "deepsets-max": seeded(lambda: DeepSets(dim, 32, 3, pooling="max"), g_init),
        "set-transformer": seeded(
            lambda: SetTransformer(dim, 16, 3, num_heads=2, num_sab=2, num_seeds=2), g_init
        ),
    }
    sab = seeded(lambda: SetAttentionBlock(dim, 2), g_init)
    for mod in [*models.values(), sab]:
        mod.to(F64).eval()
    g = ctx.generator(6)
    x = torch.randn(batch, n, dim, generator=g, dtype=F64)
    pe = _sinusoidal_code(n, dim) if position_code else torch.zeros(n, dim, dtype=F64)
    errors: dict[str, float] = {name: 0.0 for name in models}
    errors["sab-equivariance"] = 0.0
    with torch.no_grad():
        for _ in range(5):
            perm = torch.randperm(n, generator=g)
            xp = x[:, perm]
            for name, mod in models.items():
                e = float((mod(xp + pe) - mod(x + pe)).abs().max())
                errors[name] = max(errors[name], e)
            e = float((sab(xp + pe) - sab(x + pe)[:, perm]).abs().max())
            errors["sab-equivariance"] = max(errors["sab-equivariance"], e)
    worst = max(errors.values())
    tol = 1e-10
    margins = [at_most("max invariance or equivariance error", worst, tol)]
    return Evidence(
        predicted=0.0,
        measured=worst,
        tolerance=tol,
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            "max |f(P x) - f(x)| (invariance) and |SAB(P x) - P SAB(x)| (equivariance) over 5 "
            "random permutations of a batch of 4 sets of 10 elements, float64.",
            "Tolerance 1e-10: sums in another order differ by float64 round-off only.",
            f"position_code = {position_code}.",
        ],
        details={"errors": errors},
    )


# --------------------------------------------------------------------------------------------
@claim(
    "kernel.deepsets-vs-set-transformer",
    source="000 §8.3.2 theory B (Deep Sets vs Set Transformer table); Lee et al. 2019",
    statement="""On a pairwise set task (is any pair of points closer than r?) a Set
    Transformer beats sum-pooled Deep Sets of similar size (held-out accuracy).""",
    tier=Tier.FULL,
    falsifier=Falsifier(
        "labels independent of the sets",
        {"shuffle_labels": True},
        "training labels drawn at random: no model can learn the relation, the gap must vanish",
    ),
)
def check_deepsets_vs_set_transformer(ctx: Context, shuffle_labels: bool = False) -> Evidence:
    """Margin: accuracy(Set Transformer) - accuracy(Deep Sets) >= 0.05 on held-out sets.

    Tiny configuration redesigned (issue 12, item 2). Before: every set drawn (many on the
    boundary D ~ r), 400 Adam steps of batch 64 at a constant 3e-3, ST width 16 / 2 heads vs
    Deep Sets hidden 64, 512 held-out sets; the Set Transformer stopped half-trained (0.60-0.62)
    and the gap (0.016-0.05) was below the spread between seeds. Now: sets whose smallest
    distance D lies within a factor 1.5 of r are not drawn (the label is still exactly
    1[D < r]; r balances the classes), 500 one-cycle Adam steps (peak 6e-3, gradient norm
    clipped at 1) of batch 256, ST width 32 / 4 heads vs Deep Sets hidden 128 (36k vs 34k
    parameters), 4096 held-out sets (standard error <= 0.5/sqrt(4096) = 0.008). The Set
    Transformer converges (~0.99) within the budget on every seed while Deep Sets plateaus near
    0.82, so the gap (~0.17) is several times its spread.
    """
    from dataclasses import replace

    from transformer_math.experiments.deepsets_vs_set_transformer import (
        DeepSetsVsSetTransformerConfig,
        run,
    )

    cfg = replace(ctx.preset(DeepSetsVsSetTransformerConfig)(), seed=ctx.seed)
    cfg = replace(cfg, shuffle_labels=shuffle_labels)
    result = run(cfg, progress=ctx.report_progress)
    acc_ds = result.accuracy["deepsets"]
    acc_st = result.accuracy["set_transformer"]
    required = 0.05
    margins = [at_least("set transformer - deep sets accuracy", acc_st - acc_ds, required)]
    fig = Figure(
        title="Pairwise set task: held-out accuracy during training",
        xlabel="training step",
        ylabel="accuracy (chance 0.5)",
        series=[
            Series(name, [float(s) for s, _ in curve], [a for _, a in curve], style="o-")
            for name, curve in result.curves.items()
        ],
        hlines=[(0.5, "chance")],
    )
    se = 0.5 / math.sqrt(cfg.eval_sets)
    return Evidence(
        predicted=f"set_transformer - deepsets >= {required}",
        measured={"deepsets": acc_ds, "set_transformer": acc_st, "gap": acc_st - acc_ds},
        tolerance=required,
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            f"{cfg.set_size} points per set uniform in [0, 1]^{cfg.point_dim}, "
            f"r = {result.radius:.4f} "
            f"(balanced: positive fraction {result.positive_fraction:.3f}), sets with D in "
            f"[r/{cfg.band}, {cfg.band} r] not drawn; {cfg.train_steps} Adam steps of batch "
            f"{cfg.batch_size} (one-cycle, peak lr {cfg.lr}), {cfg.eval_sets} held-out sets; "
            f"parameters {result.parameters}; {result.seconds:.1f} s.",
            f"Required gap {required}: the held-out accuracy has standard error <= "
            f"0.5/sqrt({cfg.eval_sets}) = {se:.3f}; a gap of {required} is "
            f"{required / se:.0f} standard errors.",
            "Tiny configuration redesigned (issue 12): band around r, one-cycle Adam, 500 steps "
            "of batch 256, width 32 vs hidden 128, 4096 held-out sets (was: no band, constant "
            "lr, 400 steps of batch 64, width 16 vs hidden 64, 512 sets; gap 0.016-0.05, "
            "thinner than the spread between seeds). Why the Set Transformer wins: attention "
            "scores are functions of pairs, so one SAB compares every point with every other "
            "before pooling; Deep Sets must detect a close pair through per-point features phi "
            "alone (a partition of the square into cells of side ~r).",
            f"shuffle_labels = {cfg.shuffle_labels}.",
        ],
        figures=[fig],
        details={"parameters": result.parameters, "radius": result.radius,
                 "positive_fraction": result.positive_fraction},
    )
