"""The 1/sqrt(d_k) scale of the logits: the variance it normalises, and the hand example.

Sources: the main seed 000 §8.3.1 (property (2), exercise 8.3.1-1, the hand-computed example)
and the third seed 004 "Self-Attention机制" (Step 3); Vaswani et al. 2017, eq. 1 and footnote 4.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from transformer_math.claims.attention._common import (
    SEED_000,
    SEED_004,
    build_mha,
    sig,
    single_threaded,
)
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Margin,
    Series,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.functional.attention import (
    attention_logits,
    attention_scores,
    default_scale,
    scaled_dot_product_attention,
)

N_SIGMA = 5.0  # tolerance of the Monte-Carlo variances, in standard errors

# ---------------------------------------------------------------------------------------------
# attention.sqrt-dk-variance
# ---------------------------------------------------------------------------------------------


def _scaled_dot_products(
    d_k: int,
    samples: int,
    generator: torch.Generator,
    *,
    sigma_q: float = 1.0,
    sigma_k: float = 1.0,
    chunk: int = 8192,
) -> tuple[Tensor, Tensor]:
    """(q.k, the library's scaled logit) for ``samples`` independent pairs q ~ N(0, sigma_q^2
    I), k ~ N(0, sigma_k^2 I) on (samples, 1, 1, d_k) tensors (one query and one key per batch
    element): the raw product by ``attention_logits(q, k, 1)``, the scaled one by
    ``attention_scores(q, k)`` with the library's default scale (``default_scale``)."""
    raw: list[Tensor] = []
    scaled: list[Tensor] = []
    done = 0
    while done < samples:
        m = min(chunk, samples - done)
        q = torch.randn(m, 1, 1, d_k, generator=generator) * sigma_q
        k = torch.randn(m, 1, 1, d_k, generator=generator) * sigma_k
        raw.append(attention_logits(q, k, 1.0).reshape(m).double())
        scaled.append(attention_scores(q, k).reshape(m).double())
        done += m
    return torch.cat(raw), torch.cat(scaled)


def _variance_rel_se(d_k: int, samples: int) -> float:
    """Relative standard error of a sample variance of q.k (q, k Gaussian, independent).

    Var(s^2) / sigma^4 = 2 / (N - 1) + kappa / N with excess kurtosis kappa = 6 / d_k: a product
    of two independent centred Gaussians has kurtosis 9 (excess 6), and summing d_k i.i.d. terms
    divides the excess kurtosis by d_k.
    """
    return math.sqrt(2.0 / (samples - 1) + (6.0 / d_k) / samples)


def _standard_variances(
    samples: int, gen: torch.Generator
) -> tuple[list[Margin], dict[str, list[float]]]:
    """Part (1): Var(q.k) = d_k and Var(scale q.k) = 1 for d_k in {16, 64, 512}."""
    margins: list[Margin] = []
    values: dict[str, list[float]] = {"var_unscaled": [], "var_scaled": [],
                                      "relative_tolerance": []}
    for d_k in (16, 64, 512):
        raw, sc = _scaled_dot_products(d_k, samples, gen)
        rel = N_SIGMA * _variance_rel_se(d_k, samples)
        v_raw, v_sc = float(raw.var()), float(sc.var())
        values["var_unscaled"].append(v_raw)
        values["var_scaled"].append(v_sc)
        values["relative_tolerance"].append(rel)
        margins.append(close_to(f"Var(q.k), d_k = {d_k}", v_raw, d_k, rel=rel))
        margins.append(close_to(f"Var(scale q.k), d_k = {d_k}", v_sc, 1.0, rel=rel))
    return margins, values


def _product_of_sigmas(
    samples: int, gen: torch.Generator
) -> tuple[list[Margin], dict[str, Any]]:
    """Part (2a), exercise 8.3.1-1 with sigma_q = 2, sigma_k = 0.5: Var = d_k * 4 * 0.25 = d_k."""
    d_k = 64
    rel = N_SIGMA * _variance_rel_se(d_k, samples)
    raw, sc = _scaled_dot_products(d_k, samples, gen, sigma_q=2.0, sigma_k=0.5)
    var, var_scaled = float(raw.var()), float(sc.var())
    margins = [
        close_to("sigma_q = 2, sigma_k = 0.5: Var(q.k)", var, d_k * 4.0 * 0.25, rel=rel),
        close_to("sigma_q = 2, sigma_k = 0.5: Var(scale q.k)", var_scaled, 1.0, rel=rel),
    ]
    return margins, {"sigma_q": 2.0, "sigma_k": 0.5, "d_k": d_k, "predicted": d_k * 1.0,
                     "var_unscaled": var, "var_scaled": var_scaled}


def _unequal_projections(
    samples: int, gen: torch.Generator
) -> tuple[list[Margin], dict[str, Any]]:
    """Part (2b): W_Q initialised with twice W_K's variance, through ``project_qkv``.

    Inputs x ~ N(0, I_d) and projections with orthonormal rows times sqrt(2) (W_Q) and 1 (W_K),
    so that every query component is exactly N(0, 2), every key component N(0, 1), and the
    query of one token is independent of the key of another.
    """
    d_model, heads = 128, 2
    d_k = d_model // heads
    module = build_mha(d_model, heads, gen, dtype=torch.float32, bias=False)
    with torch.no_grad():
        nn.init.orthogonal_(module.q_proj.weight, gain=math.sqrt(2.0), generator=gen)
        nn.init.orthogonal_(module.k_proj.weight, gain=1.0, generator=gen)
    pairs = max(samples // heads, 1000)
    x = torch.randn(pairs, 2, d_model, generator=gen)  # two tokens per sequence
    with torch.no_grad():
        q, k, _ = module.project_qkv(x, x, x)  # (pairs, H, 2, d_k)
    q0, k1 = q[:, :, :1], k[:, :, 1:]  # query of token 0, key of token 1: independent
    var = float(attention_logits(q0, k1, 1.0).double().var())
    var_standard = float(attention_scores(q0, k1).double().var())  # the library's default
    corrected = default_scale(d_k) / math.sqrt(2.0 * 1.0)  # / (sigma_q sigma_k)
    var_corrected = float(attention_logits(q0, k1, corrected).double().var())
    n_b = pairs * heads
    rel = N_SIGMA * _variance_rel_se(d_k, n_b)
    margins = [
        close_to("W_Q at twice W_K's variance: Var(q.k)", var, d_k * 2.0, rel=rel),
        # the plain sqrt(d_k) leaves variance 2
        close_to("W_Q at twice W_K's variance: Var(scale q.k)", var_standard, 2.0, rel=rel),
        close_to("W_Q at twice W_K's variance: Var(corrected scale q.k)", var_corrected, 1.0,
                 rel=rel),
    ]
    return margins, {
        "sigma_q^2": 2.0, "sigma_k^2": 1.0, "d_k": d_k, "samples": n_b,
        "predicted_unscaled": 2.0 * d_k, "var_unscaled": var,
        "var_with_standard_scale": var_standard, "var_with_corrected_scale": var_corrected,
        "relative_tolerance": rel,
    }


def _variance_figure(samples: int, gen: torch.Generator) -> Figure:
    """Variance against d_k for three scalings (log-log), with the predicted lines."""
    grid = [2**i for i in range(1, 10)]
    fig_samples = max(samples // 8, 1000)
    fig: dict[str, list[float]] = {"none": [], "sqrt_dk": [], "d_k": []}
    for d in grid:
        raw, _ = _scaled_dot_products(d, fig_samples, gen)
        for key, c in (("none", 1.0), ("sqrt_dk", 1.0 / math.sqrt(d)), ("d_k", 1.0 / d)):
            fig[key].append(float((c * raw).var()))  # Var(c q.k) = c^2 Var(q.k)
    gx = [float(d) for d in grid]
    return Figure(
        title="Variance of attention logits q.k * scale, q, k ~ N(0, I)",
        xlabel="d_k",
        ylabel="Var(scale * q.k)",
        logx=True,
        logy=True,
        series=[
            Series("unscaled (measured)", gx, fig["none"], kind="scatter", style="o"),
            Series("/sqrt(d_k) (measured)", gx, fig["sqrt_dk"], kind="scatter", style="s"),
            Series("/d_k (measured)", gx, fig["d_k"], kind="scatter", style="^"),
            Series("d_k (theory)", gx, gx, style="--"),
            Series("1 (theory)", gx, [1.0] * len(gx), style="--"),
            Series("1/d_k (theory)", gx, [1.0 / d for d in gx], style="--"),
        ],
    )


@claim(
    "attention.sqrt-dk-variance",
    source=f"{SEED_000} property (2) and exercise 8.3.1-1; {SEED_004} Step 3",
    statement="""For q, k with independent N(0, 1) components, Var(q.k) = d_k and
    Var(q.k / sqrt(d_k)) = 1, for d_k in {16, 64, 512}. In general Var(q.k) = d_k sigma_q^2
    sigma_k^2, so the variance-normalising factor is sigma_q sigma_k sqrt(d_k): with sigma_q = 2,
    sigma_k = 0.5 the plain sqrt(d_k) is still right; with W_Q initialised at twice W_K's variance
    it is not.""",
    falsifier="attention.scale-by-dk",
    expected="verified",
    version=2,
    seed_refs=[("000", 223, 259), ("000", 400, 400), ("004", 31, 43),
               ("000", 1580, 1580)],  # project M1
)
@single_threaded
def check_sqrt_dk_variance(ctx: Context) -> Evidence:
    """Monte-Carlo variances of logits: q.k by ``attention_logits`` and the scaled logit by
    ``attention_scores`` at the library's default scale (000 §8.3.1 property 2).

    Version 2 (issue 14): the scaled logits come from the library's default scale
    (``functional.attention.default_scale``, used by every attention call without an explicit
    scale), no longer from a scale chosen inside the claim; the falsifier is the planted bug
    ``attention.scale-by-dk`` (default scale 1/d_k), not a keyword argument.

    Derivation (000 §8.3.1): E[q_l k_l] = 0, Var(q_l k_l) = Var(q_l) Var(k_l), and the d_k terms
    are independent, so Var(q.k) = d_k sigma_q^2 sigma_k^2; scaling by c multiplies it by c^2.
    Case (b) of exercise 8.3.1-1 runs through ``MultiHeadAttention.project_qkv``
    (``_unequal_projections``). Tolerance: 5 standard errors of a sample variance.
    """
    gen = ctx.generator(101)
    samples = ctx.pick(4_000, 20_000, 200_000)
    standard, values = _standard_variances(samples, gen)
    general_a, details_a = _product_of_sigmas(samples, gen)
    general_b, details_b = _unequal_projections(samples, gen)
    margins = [*standard, *general_a, *general_b]
    tolerances, rel_b = values["relative_tolerance"], details_b.pop("relative_tolerance")
    d_k = details_a["d_k"]
    return Evidence(
        predicted=[16, 64, 512, 1.0, 1.0, 1.0, 128, 1.0],
        measured=[sig(v) for v in (*values["var_unscaled"], *values["var_scaled"],
                                   details_b["var_unscaled"],
                                   details_b["var_with_corrected_scale"])],
        tolerance=(
            f"relative {tolerances[0]:.3f} / {tolerances[1]:.3f} / {tolerances[2]:.3f} for "
            f"d_k = 16 / 64 / 512 (5 standard errors, N = {samples}); {rel_b:.3f} for the W_Q "
            "case"
        ),
        verdict=decide(margins),
        notes=[
            "Order: Var(q.k) for d_k = 16, 64, 512; Var(q.k/sqrt(d_k)) for the same; "
            "Var(q.k) with W_Q at twice W_K's variance (d_k = 64, predicted d_k sigma_q^2 "
            "sigma_k^2 = 128); the same with the corrected factor sqrt(2 d_k).",
            "Exercise 8.3.1-1: only the product sigma_q sigma_k matters. sigma_q = 2, sigma_k = "
            f"0.5 gives Var(q.k) = {details_a['var_unscaled']:.1f} (predicted {d_k}), so "
            "sqrt(d_k) stays right; W_Q at twice W_K's variance gives Var(q.k/sqrt(d_k)) = "
            f"{details_b['var_with_standard_scale']:.3f} (predicted 2): the correct factor is "
            "sigma_q sigma_k sqrt(d_k) = sqrt(2 d_k), which gives "
            f"{details_b['var_with_corrected_scale']:.3f}.",
            "Tolerance: 5 standard errors of a sample variance, sqrt(2/(N-1) + (6/d_k)/N) "
            "relative (the 6/d_k term is the excess kurtosis of q.k).",
        ],
        figures=[_variance_figure(samples, gen)],
        details={"samples": samples, "default_scale_d_k_64": default_scale(64),
                 "d_k": [16, 64, 512], **values,
                 "general_a": details_a, "general_b": details_b},
        margins=margins,
    )


# ---------------------------------------------------------------------------------------------
# attention.hand-example
# ---------------------------------------------------------------------------------------------


def _hand_example_exact() -> tuple[list[float], list[float]]:
    """Closed form: logits (1, 0, 1)/sqrt(2), weights e^(1/sqrt 2) / (2 e^(1/sqrt 2) + 1) for
    k1, k3 and 1 / (2 e^(1/sqrt 2) + 1) for k2; output sum_j w_j v_j."""
    e = math.exp(1.0 / math.sqrt(2.0))
    w = [e / (2 * e + 1), 1 / (2 * e + 1), e / (2 * e + 1)]
    return w, [w[0] * 10 + w[2] * 5, w[1] * 10 + w[2] * 5]


def _max_diff(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


@claim(
    "attention.hand-example",
    source=f"{SEED_000} 一个手算的最小例子",
    statement="""For q1 = (1, 0), keys (1, 0), (0, 1), (1, 1), values (10, 0), (0, 10), (5, 5) and
    d_k = 2, the weights are (0.401, 0.198, 0.401) and the output is (6.01, 3.98).""",
    falsifier="attention.scale-dropped",
    expected="verified",
    version=2,
    seed_refs=[("000", 331, 353)],
)
@single_threaded
def check_hand_example(ctx: Context) -> Evidence:
    """``scaled_dot_product_attention`` on the seed's numbers (float64) at the library's default
    scale, compared with the seed's printed values and with the exact closed form
    (``_hand_example_exact``). Version 2 (issue 14): the scale is the library's default (no
    claim-local choice); the falsifier is the planted bug ``attention.scale-dropped`` (default
    scale 1: weights (0.422, 0.155, 0.422)).

    Tolerances: weights 5e-4 (the seed prints 3 decimals); output 0.01 (the seed multiplies its
    rounded weights: 0.401 * 15 = 6.015 -> 6.01, while the exact value is 6.0167); exact closed
    form 1e-12.
    """
    del ctx  # no randomness
    dtype = torch.float64
    q = torch.tensor([[[[1.0, 0.0]]]], dtype=dtype)
    k = torch.tensor([[[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]], dtype=dtype)
    v = torch.tensor([[[[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]]]], dtype=dtype)
    out = scaled_dot_product_attention(q, k, v, return_weights=True)  # default scale
    assert out.weights is not None
    weights = [float(w) for w in out.weights.reshape(3)]
    output = [float(o) for o in out.output.reshape(2)]
    seed_weights, seed_output = [0.401, 0.198, 0.401], [6.01, 3.98]
    exact_w, exact_o = _hand_example_exact()
    margins = [
        at_most("max |weight - seed's printed weight|", _max_diff(weights, seed_weights), 5e-4),
        at_most("max |output - seed's printed output|", _max_diff(output, seed_output), 0.01),
        at_most("max |weight - closed form|", _max_diff(weights, exact_w), 1e-12),
        at_most("max |output - closed form|", _max_diff(output, exact_o), 1e-12),
    ]
    return Evidence(
        predicted=[*seed_weights, *seed_output],
        measured=[round(w, 4) for w in weights] + [round(o, 4) for o in output],
        tolerance="weights 5e-4 (3 printed decimals), output 0.01; closed form 1e-12",
        verdict=decide(margins),
        notes=[
            f"Exact values: weights ({exact_w[0]:.5f}, {exact_w[1]:.5f}, {exact_w[2]:.5f}), "
            f"output ({exact_o[0]:.4f}, {exact_o[1]:.4f}). The seed's 6.01 comes from its "
            "rounded weights (0.401 * 15 = 6.015); the exact first coordinate 6.0167 would "
            "round to 6.02. A rounding detail, not an error of the method.",
        ],
        details={"scale": default_scale(2), "weights": weights, "output": output,
                 "exact_weights": exact_w, "exact_output": exact_o},
        margins=margins,
    )
