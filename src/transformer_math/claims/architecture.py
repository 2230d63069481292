"""Claims of 000 §8.3.7 (residuals, normalisation, scaling laws, FlashAttention) and 004's
encoder/decoder layers (CLAIMS.md, "architecture").

Every check measures the project's own implementation (blocks, norms, tiled attention and its IO
counter, the scaling-law calculator) and compares it with an independent prediction (an ODE solved
by Runge-Kutta, a theorem's rate, the paper's Table 3, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Figure,
    Series,
    Size,
    agreement,
    all_hold,
    at_least,
    at_most,
    claim,
    close_to,
)
from transformer_math.diagnostics.tensor_memory import peak_tensor_bytes
from transformer_math.functional.attention import scaled_dot_product_attention
from transformer_math.functional.norms import layer_norm, rms_norm
from transformer_math.functional.tiled_attention import (
    IOCounter,
    tiled_attention,
    tiled_attention_forward,
)
from transformer_math.nn.attention import MultiHeadAttention
from transformer_math.nn.blocks import BlockConfig, Decoder, Encoder, TransformerBlock
from transformer_math.nn.feedforward import GeluMLP
from transformer_math.nn.init import seeded
from transformer_math.theory.io_model import (
    crossover_sram,
    flash_rate,
    standard_attention_io,
    tile_sizes_for_sram,
    tiled_attention_io,
)
from transformer_math.theory.residual import euler_residual_stack, rk4_solve
from transformer_math.theory.scaling_laws import (
    CHINCHILLA_TABLE_3,
    compute_optimal,
    inference_aware_optimum,
)

SEED_000 = "000 §8.3.7"


def _xavier_init_(module: nn.Module, generator: torch.Generator) -> None:
    """Xavier-uniform weights and zero biases for every Linear (Xiong et al. 2020's setting)."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight, generator=generator)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


def _loglog_slope(xs: list[float], ys: list[float]) -> float:
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum(
        (a - mx) ** 2 for a in lx
    )


# --------------------------------------------------------------------------------------------
@claim(
    "architecture.residual-euler",
    source=f"{SEED_000} 理论 A (residual = forward Euler); Haber & Ruthotto 2017",
    statement="""A residual stack x_{l+1} = x_l + (T/L) f(x_l) is forward Euler for dx/dt = f(x):
    its
    output converges to the ODE solution x(T) with error O(1/L) (log-log slope -1).""",
    falsifier=Falsifier(
        "unit-step",
        {"step": 1.0},
        "the seed's literal x + f(x) (step 1 instead of T/L): integrates to time L, "
        "never converges",
    ),
)
def check_residual_euler(ctx: Context, step: float | None = None) -> Evidence:
    g = ctx.generator(11)
    d, horizon = 16, 1.0
    # Tiny (issue 12): L = 4..64 gave slopes -0.95..-1.01 over seeds 0-4 (slack/spread 3.1): the
    # O(h^2) term of the Euler error still bends the fit at L = 4. L = 16..256 is in the
    # asymptotic range (slopes -0.987..-1.002) and costs little next to the RK4 reference.
    depths = [16, 32, 64, 128, 256] if ctx.size is Size.TINY else [4, 8, 16, 32, 64, 128, 256]
    f = seeded(lambda: GeluMLP(d, 4 * d), g).double()
    _xavier_init_(f, g)
    x0 = torch.randn(d, generator=g, dtype=torch.float64)
    with torch.no_grad():
        exact = rk4_solve(f, x0, horizon=horizon, num_steps=1024)
        errors = []
        for i, depth in enumerate(depths):
            xl = euler_residual_stack(f, x0, horizon=horizon, num_layers=depth, step=step)
            errors.append(float((xl - exact).norm() / exact.norm()))
            ctx.report_progress((i + 1) / len(depths))
    slope = _loglog_slope([float(L) for L in depths], errors)
    margins = [
        close_to("log-log slope of the error vs L, distance to -1", slope, -1.0, abs_=0.1),
        at_most("error at the largest L / error at the smallest L", errors[-1] / errors[0], 1.0),
    ]
    ok = all_hold(margins)
    return Evidence(
        predicted=-1.0,
        measured=round(slope, 4),
        tolerance="slope -1 +- 0.1 (higher-order terms of the Euler error expansion at small L)",
        verdict=agreement(ok),
        notes=[
            "Issue 12 (tiny size): L = 4..64 gave slopes -0.95..-1.01 over seeds 0-4 (slack / "
            "spread 3.1, the O(h^2) term still bends the fit at L = 4); L = 16..256 gives "
            "slopes within 0.013 of -1 (slack / spread 20). Tolerance unchanged.",
            "f = the project's GeluMLP (d=16, Xavier init), T = 1, float64; reference x(T) from "
            "RK4 with 1024 steps (error O(h^4) ~ 1e-12, far below the Euler errors).",
            f"relative error at L={depths[0]}: {errors[0]:.3e}, "
            f"at L={depths[-1]}: {errors[-1]:.3e}",
        ],
        figures=[
            Figure(
                "Residual stack vs ODE solution (forward Euler)",
                "layers L",
                "relative error |x_L - x(T)|",
                [
                    Series(
                        "residual stack x + (T/L) f(x)" if step is None else f"step {step}",
                        [float(L) for L in depths],
                        errors,
                        style="o-",
                    ),
                    Series(
                        "1/L reference",
                        [float(L) for L in depths],
                        [errors[0] * depths[0] / L for L in depths],
                        style="--",
                    ),
                ],
                logx=True,
                logy=True,
            )
        ],
        details={"depths": depths, "errors": errors},
        margins=margins,
    )


# --------------------------------------------------------------------------------------------
@claim(
    "architecture.residual-gradient",
    source=f"{SEED_000} 理论 A, exercise 8.3.7-2",
    statement="""With residuals (x + (T/L) f_l(x)) the input-output Jacobian norm stays O(1) across
    depth, bounded by exp(T max_l |J_{f_l}|); without residuals (x <- f_l(x)) it changes
    exponentially with depth.""",
    falsifier=Falsifier(
        "identity-removed",
        {"residual": False},
        "the residual arm without its identity path: the bound exp(T K) is violated",
    ),
)
def check_residual_gradient(ctx: Context, residual: bool = True) -> Evidence:
    g = ctx.generator(12)
    d = 16
    depths = [1, 2, 4, 8, 16, 32] if ctx.size is Size.TINY else [1, 2, 4, 8, 16, 32, 64]
    layers = [seeded(lambda: GeluMLP(d, 4 * d), g) for _ in range(max(depths))]
    for f in layers:
        _xavier_init_(f, g)
    x0 = torch.randn(d, generator=g)

    def spectral(fn: Callable[[Tensor], Tensor]) -> float:
        return float(torch.linalg.matrix_norm(torch.autograd.functional.jacobian(fn, x0), ord=2))

    branch_max = max(spectral(f) for f in layers)

    def stack(depth: int, with_identity: bool) -> Callable[[Tensor], Tensor]:
        def run(x: Tensor) -> Tensor:
            for f in layers[:depth]:
                x = x + f(x) / depth if with_identity else f(x)
            return x

        return run

    res = [spectral(stack(L, residual)) for L in depths]
    plain = [spectral(stack(L, False)) for L in depths]
    ctx.report_progress(1.0)
    bound = math.exp(branch_max)  # T = 1: |prod (I + J/L)| <= (1 + K/L)^L <= e^K
    lower = math.exp(-branch_max)
    plain_rate = (math.log(plain[-1]) - math.log(plain[0])) / (depths[-1] - depths[0])
    margins = [
        at_most("max over L of residual |J| / e^K", max(res) / bound, 1.0),
        at_least("min over L of residual |J| / e^-K", min(res) / lower, 1.0),
        at_least("|d ln J / dL| without residuals", abs(plain_rate), 0.05),
    ]
    return Evidence(
        predicted={
            "residual_bound": [round(lower, 3), round(bound, 3)],
            "plain_rate_abs_min": 0.05,
        },
        measured={
            "residual_range": [round(min(res), 3), round(max(res), 3)],
            "plain_log_rate_per_layer": round(plain_rate, 3),
        },
        tolerance="residual norms inside [e^-K, e^K] (exact bound); plain |d ln J / dL| >= 0.05",
        verdict=agreement(all_hold(margins)),
        notes=[
            "f_l = independent GeluMLPs (d=16, Xavier init); spectral norm of the full Jacobian "
            f"at a random input; K = max_l |J_f_l| = {branch_max:.3f}.",
            f"without residuals the norm goes from {plain[0]:.3g} (L=1) to {plain[-1]:.3g} "
            f"(L={depths[-1]}): exponential decay.",
        ],
        figures=[
            Figure(
                "Input-output Jacobian norm vs depth",
                "depth L",
                "|d x_L / d x_0|_2",
                [
                    Series(
                        "residual x + f/L" if residual else "residual arm without identity",
                        [float(L) for L in depths],
                        res,
                        style="o-",
                    ),
                    Series("no residual x <- f(x)", [float(L) for L in depths], plain, style="s--"),
                ],
                logy=True,
                hlines=[(bound, "e^K bound")],
            )
        ],
        details={"depths": depths, "residual": res, "plain": plain, "K": branch_max},
        margins=margins,
    )


# --------------------------------------------------------------------------------------------
@claim(
    "architecture.layernorm-geometry",
    source=f"{SEED_000} 理论 B and RMSNorm (深化); Zhang & Sennrich 2019",
    statement="""LayerNorm output has mean 0 and norm sqrt(d) and is invariant to x -> a x + b;
    RMSNorm output has norm sqrt(d) and is invariant to x -> a x but not to a shift x -> x + b.""",
    falsifier=Falsifier(
        "no-centring",
        {"layernorm": "rms"},
        "LayerNorm without the mean subtraction: mean != 0 and not shift-invariant",
    ),
)
def check_layernorm_geometry(ctx: Context, layernorm: str = "layer") -> Evidence:
    g = ctx.generator(13)
    d = 64
    count = 64 if ctx.size is Size.TINY else 512
    z = torch.randn(count, d, generator=g, dtype=torch.float64)
    a = 10 ** (torch.rand(count, 1, generator=g, dtype=torch.float64) * 3 - 1)  # 0.1 .. 100
    b = torch.randn(count, 1, generator=g, dtype=torch.float64) * 5
    # nonzero means on a fixed grid in [-2, 2] (issue 12: drawn N(0, 1) means made the smallest
    # shift change, set by the largest |mean| drawn, vary 0.71-1.23 over seeds 0-4)
    x = z + torch.linspace(-2.0, 2.0, count, dtype=torch.float64).unsqueeze(-1)
    ln: Callable[[Tensor], Tensor] = layer_norm if layernorm == "layer" else rms_norm
    y_ln, y_rms = ln(x), rms_norm(x)
    root = math.sqrt(d)
    y_max = float(y_ln.abs().max())
    m = {
        "ln_max_abs_mean": float(y_ln.mean(-1).abs().max()),
        "ln_max_rel_norm_err": float((y_ln.norm(dim=-1) / root - 1).abs().max()),
        "ln_affine_invariance_err": float((ln(a * x + b) - y_ln).abs().max()) / y_max,
        "rms_max_rel_norm_err": float((y_rms.norm(dim=-1) / root - 1).abs().max()),
        "rms_scale_invariance_err": float((rms_norm(a * x) - y_rms).abs().max()) / y_max,
        "rms_min_shift_change": float((rms_norm(x + 1.0) - y_rms).norm(dim=-1).min()),
    }
    # eps enters as sqrt(var / (var + eps)) ~ 1 - eps / (2 var): bound every deviation by
    # eps / min var over all inputs (the scaled ones a x have var a^2 var(x), a >= 0.1).
    min_var = min(
        float(x.var(-1, unbiased=False).min()), float((a * x).var(-1, unbiased=False).min())
    )
    tol = 1e-5 / min_var
    # The eps-induced errors are reported in units of their bound tol (which depends on the drawn
    # inputs), so that the margin's threshold is the same number, 1, for every seed.
    margins = [
        at_most("LayerNorm max |mean|", m["ln_max_abs_mean"], 1e-9),
        at_most("LayerNorm max |norm/sqrt(d) - 1| / tol", m["ln_max_rel_norm_err"] / tol, 1.0),
        at_most("LayerNorm affine-invariance error / tol",
                m["ln_affine_invariance_err"] / tol, 1.0),
        at_most("RMSNorm max |norm/sqrt(d) - 1| / tol", m["rms_max_rel_norm_err"] / tol, 1.0),
        at_most("RMSNorm scale-invariance error / tol", m["rms_scale_invariance_err"] / tol, 1.0),
        at_least("RMSNorm min change under a shift of 1", m["rms_min_shift_change"], 0.1),
    ]
    ok = all_hold(margins)
    sample = slice(0, min(count, 200))
    return Evidence(
        predicted={
            "ln_mean": 0.0,
            "ln_norm": root,
            "rms_norm": root,
            "ln_invariant": "a x + b",
            "rms_invariant": "a x only",
        },
        measured={k: float(f"{v:.3e}") for k, v in m.items()},
        tolerance=f"eps-induced: relative {tol:.1e} (eps / min var, min var = {min_var:.3f}); "
        "invariance errors relative to max |y|; mean 1e-9 (float64 rounding); a shift of 1 must "
        "move RMSNorm outputs by >= 0.1",
        verdict=agreement(ok),
        notes=[
            "float64 inputs z + c (z ~ N(0, I), row means c on a grid in [-2, 2]), scales a in "
            "[0.1, 100] and shifts b ~ N(0, 25); the project's functional layer_norm / rms_norm "
            "with their default eps.",
            "Issue 12: the row means were N(0, 1) draws; the smallest RMSNorm shift change is set "
            "by the largest |mean| and varied 0.71-1.23 over seeds 0-4 (slack/spread 2.9 < 3). "
            "A fixed grid of means removes that extreme-value noise; thresholds unchanged.",
        ],
        figures=[
            Figure(
                "Normalised vectors: mean vs norm / sqrt(d)",
                "mean of output",
                "|y| / sqrt(d)",
                [
                    Series(
                        "LayerNorm" if layernorm == "layer" else "LayerNorm without centring",
                        y_ln[sample].mean(-1).tolist(),
                        (y_ln[sample].norm(dim=-1) / root).tolist(),
                        kind="scatter",
                    ),
                    Series(
                        "RMSNorm",
                        y_rms[sample].mean(-1).tolist(),
                        (y_rms[sample].norm(dim=-1) / root).tolist(),
                        kind="scatter",
                    ),
                ],
            )
        ],
        details={"d": d, "samples": count},
        margins=margins,
    )


# --------------------------------------------------------------------------------------------
def _last_layer_grad_profile(
    norm: str, depth: int, g: torch.Generator, *, dim: int, seq: int, batch: int, vocab: int
) -> list[float]:
    """|dLoss/dW2| of each block's FFN output weight at initialisation (Xiong et al. Fig. 3)."""
    cfg = BlockConfig(dim=dim, num_heads=4, norm=norm, attention_backend="reference")
    blocks = seeded(lambda: nn.ModuleList(TransformerBlock(cfg) for _ in range(depth)), g)
    head = seeded(lambda: nn.Linear(dim, vocab), g)
    _xavier_init_(blocks, g)
    _xavier_init_(head, g)
    final = seeded(lambda: nn.LayerNorm(dim) if norm == "pre" else nn.Identity(), g)
    x = torch.randn(batch, seq, dim, generator=g)
    y = torch.randint(0, vocab, (batch, seq), generator=g)
    h = x
    for block in blocks:
        h = block(h, is_causal=True)
    loss = nn.functional.cross_entropy(head(final(h)).reshape(-1, vocab), y.reshape(-1))
    loss.backward()
    return [float(b.ffn.fc_out.weight.grad.norm()) for b in blocks]


@claim(
    "architecture.pre-vs-post-norm",
    source=f"{SEED_000} Pre-LN vs Post-LN; 004 Pre-Norm vs Post-Norm; Xiong et al. 2020, Thm. 1",
    statement="""At initialisation the gradient of the last layers is large for Post-LN and does not
    shrink with depth L, while Pre-LN's shrinks like 1/sqrt(L): the Post/Pre ratio near the output
    grows like sqrt(L) (Xiong et al. 2020, Theorem 1).""",
    falsifier=Falsifier(
        "pre-arm-is-post",
        {"pre_arm": "post"},
        "the Pre-LN arm built with the normalisation after the residual addition",
    ),
)
def check_pre_vs_post_norm(ctx: Context, pre_arm: str = "pre") -> Evidence:
    tiny = ctx.size is Size.TINY
    # Tiny (issue 12): d = 32, L in {4, 8, 16}, 2 seeds gave a Post/Pre slope of 0.60-0.84 over
    # ctx seeds 0-4 (seed 1 failed) and a Pre-LN slope as flat as -0.26; at d = 64 the gradient
    # norms concentrate (spread of both slopes ~0.02) and L = 2 widens the log-depth range.
    depths = [2, 4, 8, 16] if tiny else [6, 12, 24]
    shape = (
        {"dim": 64, "seq": 16, "batch": 4, "vocab": 64}
        if tiny
        else {"dim": 64, "seq": 32, "batch": 8, "vocab": 64}
    )
    seeds = 3
    last = {"pre": [], "post": []}  # type: dict[str, list[float]]
    profiles: dict[str, list[float]] = {}
    for i, depth in enumerate(depths):
        for arm, norm in (("pre", pre_arm), ("post", "post")):
            runs = [
                _last_layer_grad_profile(norm, depth, ctx.generator(100 * s + depth), **shape)
                for s in range(seeds)
            ]
            mean_profile = [sum(r[j] for r in runs) / seeds for j in range(depth)]
            last[arm].append(sum(mean_profile[-2:]) / 2)  # the two layers nearest the output
            if depth == depths[-1]:
                profiles[arm] = mean_profile
        ctx.report_progress((i + 1) / len(depths))
    ratios = [po / pr for po, pr in zip(last["post"], last["pre"], strict=True)]
    slope_ratio = _loglog_slope([float(L) for L in depths], ratios)
    slope_pre = _loglog_slope([float(L) for L in depths], last["pre"])
    margins = [
        close_to("Post/Pre log-log slope, distance to 0.5", slope_ratio, 0.5, abs_=0.25),
        close_to("Pre-LN last-layer log-log slope, distance to -0.5", slope_pre, -0.5, abs_=0.25),
        at_least("min over L of Post/Pre", min(ratios), 1.0),
    ]
    ok = all_hold(margins)
    layers = [float(j + 1) for j in range(depths[-1])]
    return Evidence(
        predicted={"post_over_pre_slope": 0.5, "pre_last_layer_slope": -0.5},
        measured={
            "post_over_pre_slope": round(slope_ratio, 3),
            "pre_last_layer_slope": round(slope_pre, 3),
            "post_over_pre": [round(r, 2) for r in ratios],
        },
        tolerance="log-log slopes +- 0.25 (Theorem 1 gives orders, not constants; 3 depths, "
        "mean of seeds) and Post/Pre > 1 at every depth",
        verdict=agreement(ok),
        notes=[
            "Issue 12 (tiny size): d = 32, L in {4, 8, 16}, 2 seeds gave a Post/Pre slope of "
            "0.60-0.84 over seeds 0-4 (seed 1 failed, spread 0.09) and a Pre-LN slope as flat as "
            "-0.256 at seed 0 (limit -0.25; before modules were built with nn.init.seeded); now "
            "d = 64, L in {2, 4, 8, 16}, 3 seeds: Post/Pre 0.51-0.54, Pre-LN -0.45..-0.48 "
            "(spreads ~0.01, slack / spread >= 16). Limits unchanged.",
            f"gradient norms of the FFN output weight W2 per layer, mean of {seeds} seeds, "
            f"blocks of the project (d={shape['dim']}, 4 heads, causal, Xavier init), "
            "cross-entropy through a linear head; 'last' = mean of the two layers nearest the "
            "output.",
            "Layer profile at the largest depth: Pre-LN decreases towards the output; Post-LN "
            "stays "
            "at a larger, roughly flat level in this small setting (Xiong et al.'s Fig. 3 shows it "
            "increasing with the layer index at d = 512).",
        ],
        figures=[
            Figure(
                f"Gradient norm by layer at initialisation (L = {depths[-1]})",
                "layer",
                "|dLoss / dW2|",
                [
                    Series(
                        "Pre-LN" if pre_arm == "pre" else "Pre-LN arm (post placement)",
                        layers,
                        profiles["pre"],
                        style="o-",
                    ),
                    Series("Post-LN", layers, profiles["post"], style="s-"),
                ],
            )
        ],
        details={"depths": depths, "last_layer_pre": last["pre"], "last_layer_post": last["post"]},
        margins=margins,
    )


# --------------------------------------------------------------------------------------------
@claim(
    "architecture.chinchilla",
    source=f"{SEED_000} 理论 C (M4) and its C = 1e21 example; Hoffmann et al. 2022 Table 3; "
    "Sardana et al. 2024",
    statement="""The calculator reproduces Chinchilla's Table 3 within 10 %, sizes D = 1e9 tokens to
    N ~ 5e7 (20 tokens/param) and gives a smaller, longer-trained model when inference is counted.
    The seed's C = 1e21 example (N ~ 1e10, D ~ 2e11) is inconsistent: 6 N D = 1.2e22.""",
    falsifier=Falsifier(
        "cost-2ND",
        {"flops_per_param_token": 2.0},
        "training cost C = 2 N D (forward pass only) instead of 6 N D",
    ),
)
def check_chinchilla(ctx: Context, flops_per_param_token: float = 6.0) -> Evidence:
    rows = []
    worst = 0.0
    for n, c, d in CHINCHILLA_TABLE_3:
        by_c = compute_optimal(flops=c, approach="1", flops_per_param_token=flops_per_param_token)
        by_n = compute_optimal(params=n, approach="1", flops_per_param_token=flops_per_param_token)
        errs = [by_c.params / n - 1, by_c.tokens / d - 1, by_n.flops / c - 1]
        worst = max(worst, *(abs(e) for e in errs))
        rows.append(
            {
                "params": n,
                "N_from_C": by_c.params,
                "D_from_C": by_c.tokens,
                "C_from_N": by_n.flops,
                "D_from_N": by_n.tokens,
            }
        )
    data_limited = compute_optimal(
        tokens=1e9, approach="1", flops_per_param_token=flops_per_param_token
    )
    seed_n, seed_d, seed_c = 1e10, 2e11, 1e21
    at_seed_c = compute_optimal(
        flops=seed_c, approach="1", flops_per_param_token=flops_per_param_token
    )
    base3 = compute_optimal(flops=seed_c, approach="3")
    inf = inference_aware_optimum(base3, 1e13)
    savings = 1 - inf.total_flops / inf.compute_optimal_total_flops
    margins = [
        at_most("Table 3 max relative error", worst, 0.10),
        close_to("N for D = 1e9", data_limited.params, 5e7, rel=0.10),
        at_most("inference-aware N / compute-optimal N", inf.params / base3.params, 1.0),
        at_most("inference-aware total FLOPs / compute-optimal total FLOPs",
                inf.total_flops / inf.compute_optimal_total_flops, 1.0),
        at_least("|6 N D / C - 1| of the seed's example", abs(6 * seed_n * seed_d / seed_c - 1),
                 0.5),
    ]
    ok = all_hold(margins)
    d_from_n_worst = max(
        abs(r["D_from_N"] / d - 1) for r, (_, _, d) in zip(rows, CHINCHILLA_TABLE_3, strict=True)
    )
    ctx.report_progress(1.0)
    return Evidence(
        predicted={
            "table3_max_rel_err": 0.10,
            "N_for_D_1e9": 5e7,
            "seed_example": {"N": seed_n, "D": seed_d, "C": seed_c},
        },
        measured={
            "table3_max_rel_err": round(worst, 4),
            "N_for_D_1e9": data_limited.params,
            "seed_example_6ND": 6 * seed_n * seed_d,
            "at_C_1e21": {"N": at_seed_c.params, "D": at_seed_c.tokens},
        },
        tolerance="10 % on every Table 3 entry (N and D from C, C from N); 10 % on N(D = 1e9)",
        verdict=agreement(ok, refutes_seed=True),
        notes=[
            "The seed's worked example is refuted: N ~ 1e10 and D ~ 2e11 cost 6 N D = 1.2e22 "
            "FLOPs, "
            "12x its C = 1e21. At C = 1e21 the calculator gives N = "
            f"{at_seed_c.params:.3g}, D = {at_seed_c.tokens:.3g} (Approach 1), "
            f"N = {base3.params:.3g}, D = {base3.tokens:.3g} (Approach 3).",
            "Approach 1 uses exponents 0.50/0.50 and 20 tokens/param; going from N to D the 67B "
            f"row "
            f"is off by {100 * d_from_n_worst:.1f} % (Table 3's own rows imply a ~ 0.497, "
            "22.4 tokens/param at 67B), so Table 3 is checked as C -> (N, D) and N -> C.",
            f"Inference-aware (Sardana et al.), C = 1e21, Approach 3, 1e13 inference tokens: N = "
            f"{inf.params:.3g} ({inf.tokens / inf.params:.0f} tokens/param) instead of "
            f"{base3.params:.3g}, total FLOPs -{100 * savings:.0f} %. "
            "The tokens/param ratio depends on the inference demand; there is no fixed '1800+'.",
        ],
        details={"table3": rows, "inference_aware": inf.to_json()},
        margins=margins,
    )


# --------------------------------------------------------------------------------------------
@claim(
    "architecture.flash-io",
    source=f"{SEED_000} 理论 D, exercise 8.3.7-4; Dao et al. 2022, Theorem 2",
    statement="""Slow-memory accesses of the project's tiled attention, counted while it runs, scale
    as Theta(N^2 d^2 / M) in the on-chip size M and beat standard attention's Theta(N d + N^2) once
    M exceeds ~ d^2.""",
    falsifier=Falsifier(
        "fixed-tiles",
        {"ignore_sram": True},
        "a schedule whose tiles do not grow with M (always the smallest tile): no 1/M scaling",
    ),
)
def check_flash_io(ctx: Context, ignore_sram: bool = False) -> Evidence:
    tiny = ctx.size is Size.TINY
    n, d = (128, 16) if tiny else (512, 64)
    g = ctx.generator(14)
    q, k, v = (torch.randn(1, 1, n, d, generator=g) for _ in range(3))
    blocks = [4, 8, 16, 32] if tiny else [16, 32, 64, 128]
    srams = [5 * d * b for b in blocks]
    measured, closed, ratios = [], [], []
    with torch.no_grad():
        for i, m in enumerate(srams):
            bq, bk = tile_sizes_for_sram(srams[0] if ignore_sram else m, d)
            counter = IOCounter()
            tiled_attention_forward(q, k, v, block_q=bq, block_k=bk, io=counter)
            measured.append(counter.total)
            closed.append(tiled_attention_io(n, d, bq, bk).total)
            ratios.append(counter.total / flash_rate(n, d, m))
            ctx.report_progress((i + 1) / len(srams))
    standard = standard_attention_io(n, d).total
    slope = _loglog_slope([float(m) for m in srams], [float(x) for x in measured])
    spread = max(ratios) / min(ratios)
    m_cross = crossover_sram(n, d)
    margins = [
        at_most("max |counted - closed-form accesses|",
                max(abs(a - b) for a, b in zip(measured, closed, strict=True)), 0.0),
        at_least("log-log slope vs M (lower end)", slope, -1.1),
        at_most("log-log slope vs M (upper end)", slope, -0.8),
        at_most("max/min of accesses * M / (N^2 d^2)", spread, 1.5),
        at_most("accesses at the largest M / standard attention's", measured[-1] / standard, 1.0),
    ]
    ok = all_hold(margins)
    return Evidence(
        predicted={"slope_vs_M": -1.0, "standard_accesses": standard},
        measured={
            "slope_vs_M": round(slope, 3),
            "accesses_at_largest_M": measured[-1],
            "ratio_to_N2d2_over_M": [round(r, 2) for r in ratios],
        },
        tolerance="slope in [-1.1, -0.8] (the M-independent 3 N d + N term flattens it at "
        "large M); "
        "Theta: max/min of accesses * M / (N^2 d^2) <= 1.5 over an 8x range of M; counts equal the "
        "closed form exactly",
        verdict=agreement(ok),
        notes=[
            f"N = {n}, d = {d}, M = 5 d B_r elements for B_r in {blocks} (B_c = min(B_r, d)); the "
            "counter records every tile the loop loads/stores. Standard attention (Algorithm 0) "
            f"moves 4 N d + 4 N^2 = {standard} elements; the tiled loop wins above "
            f"M ~ {m_cross:.0f} "
            f"(= {m_cross / d**2:.1f} d^2).",
            "004's table ('HBM O(n^2) -> O(nd)') is too coarse: the tiled loop's traffic is "
            "Theta(N^2 d^2 / M), which is O(N d) only when M ~ N d (Theorem 2).",
        ],
        figures=[
            Figure(
                f"HBM accesses vs on-chip memory M (N = {n}, d = {d})",
                "M (elements)",
                "elements moved",
                [
                    Series(
                        "tiled (counted)",
                        [float(m) for m in srams],
                        [float(x) for x in measured],
                        style="o-",
                    ),
                    Series(
                        "10 N^2 d^2 / M",
                        [float(m) for m in srams],
                        [10 * flash_rate(n, d, m) for m in srams],
                        style="--",
                    ),
                ],
                logx=True,
                logy=True,
                hlines=[(float(standard), "standard attention")],
            )
        ],
        details={"srams": srams, "measured": measured, "closed_form": closed, "standard": standard},
        margins=margins,
    )


# --------------------------------------------------------------------------------------------
def _exactness_cases(g: torch.Generator) -> list[tuple[str, float, float]]:
    """(case, max |forward error|, max |gradient error|) of tiled vs reference attention."""
    out = []
    cases = [
        ("non-causal", False, False, 7, 13),
        ("causal", True, False, 16, 16),
        ("causal, q shorter (cache)", True, False, 5, 64),
        ("additive mask with a dead row", False, True, 64, 5),
        ("causal + mask, one row tile", True, True, 1, 3),
    ]
    for name, causal, masked, bq, bk in cases:
        t = 19 if "shorter" in name else 45
        q = torch.randn(2, 3, t, 16, generator=g, requires_grad=True)
        k = torch.randn(2, 3, 45, 16, generator=g, requires_grad=True)
        v = torch.randn(2, 3, 45, 8, generator=g, requires_grad=True)
        mask = None
        if masked:
            mask = torch.randn(1, 3, t, 45, generator=g)
            mask = mask.masked_fill(torch.rand(1, 3, t, 45, generator=g) < 0.3, float("-inf"))
            mask[0, 0, 2] = float("-inf")  # a fully masked query row (zero output)
        ref = scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal).output
        til = tiled_attention(q, k, v, attn_mask=mask, is_causal=causal, block_q=bq, block_k=bk)
        go = torch.randn(ref.shape, generator=g)
        gr = torch.autograd.grad(ref, (q, k, v), go)
        gt = torch.autograd.grad(til, (q, k, v), go)
        out.append(
            (
                name,
                float((ref - til).detach().abs().max()),
                max(float((a - b).abs().max()) for a, b in zip(gr, gt, strict=True)),
            )
        )
    return out


@claim(
    "architecture.tiled-attention-exact",
    source=f"{SEED_000} 理论 D (online softmax); Dao et al. 2022 Algorithm 1; FACTS.md",
    statement="""Tiled online-softmax attention equals reference attention (fp32 error <= 1e-5,
    causal or not, with masks, any block split, gradients too) and never holds an n x n matrix: its
    measured
    peak memory is a small fraction of n^2 floats.""",
    falsifier=Falsifier(
        "single-tile",
        {"one_tile": True},
        "block sizes equal to n: one tile holds the whole n x n logit matrix",
    ),
)
def check_tiled_attention_exact(ctx: Context, one_tile: bool = False) -> Evidence:
    g = ctx.generator(15)
    cases = _exactness_cases(g)
    fwd = max(c[1] for c in cases)
    bwd = max(c[2] for c in cases)
    ctx.report_progress(0.3)
    n, d = 4096, 64
    q, kk, v = (torch.randn(1, 1, n, d, generator=g) for _ in range(3))
    block = n if one_tile else 128
    with torch.no_grad():
        _, peak = peak_tensor_bytes(
            lambda: tiled_attention(q, kk, v, block_q=block, block_k=block, is_causal=True)
        )
    method = "live tensor bytes (diagnostics.tensor_memory)"
    ctx.report_progress(1.0)
    matrix = n * n * 4
    margins = [
        at_most("max forward error", fwd, 1e-5),
        at_most("max gradient error", bwd, 1e-4),
        at_most("peak bytes / n x n fp32 bytes", peak / matrix, 0.1),
    ]
    ok = all_hold(margins)
    return Evidence(
        predicted={"max_forward_error": 1e-5, "peak_bytes_at_most": int(0.1 * matrix)},
        measured={
            "max_forward_error": float(f"{fwd:.2e}"),
            "max_grad_error": float(f"{bwd:.2e}"),
            "peak_bytes": peak,
            "n_x_n_bytes": matrix,
        },
        tolerance="forward 1e-5 (fp32 rounding of sums of 45 terms); gradients 1e-4 (longer "
        "accumulation chains); peak <= 10 % of one n x n fp32 matrix (n = 4096, d = 64: the tiled "
        "working set is O(n d + block^2) ~ 1 MiB + tiles)",
        verdict=agreement(ok),
        notes=[f"{name}: forward {fe:.1e}, grad {ge:.1e}" for name, fe, ge in cases]
        + [
            f"peak measured as {method}, causal, block {block}: {peak / 2**20:.2f} MiB vs "
            f"n x n = {matrix / 2**20:.0f} MiB. Before issue 12 the peak was the process's "
            "resident-set high-water mark, which depends on the allocator's state (1.84 vs "
            "1.88 MiB in two orders of the quick tier); the tensor count is deterministic."
        ],
        details={"cases": cases, "peak_bytes": peak, "block": block},
        margins=margins,
    )


# --------------------------------------------------------------------------------------------
class _SeedSignatureAttention(nn.Module):
    """The attention signature 004 defines, forward(query, key, value, mask=None), on our MHA.

    Used only to show what 004's DecoderLayer calls do with that signature; ``mask`` follows
    004's convention (0 = blocked).
    """

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.mha = MultiHeadAttention(dim, heads, backend="reference")

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
    ) -> Tensor:
        allowed = None if mask is None else mask.bool()
        return self.mha(query, key, value, attn_mask=allowed).output


def _seed_call_outcomes(
    x: Tensor, memory: Tensor, tgt_mask: Tensor, src_mask: Tensor
) -> dict[str, str]:
    """What 004's DecoderLayer's two attention calls do with 004's own attention signature."""
    attn = seeded(lambda: _SeedSignatureAttention(x.shape[-1], 2), 0)  # weights do not matter
    outcomes = {}
    calls = {
        "self_attn(norm1(x), tgt_mask)": lambda: attn(x, tgt_mask),  # type: ignore[call-arg]
        "cross_attn(norm2(x), encoder_output, src_mask)": lambda: attn(x, memory, src_mask),  # type: ignore[call-arg]
    }
    for name, call in calls.items():
        try:
            call()
            outcomes[name] = "ran"
        except (TypeError, ValueError, RuntimeError) as exc:
            outcomes[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    return outcomes


@claim(
    "architecture.encoder-decoder",
    source="004 Transformer编码器与解码器 (EncoderLayer, DecoderLayer); Vaswani et al. 2017 §3.1",
    statement="""Pre-norm encoder and decoder layers: causal self-attention (outputs at t ignore
    targets
    after t) and cross-attention to the encoder output that ignores padded source tokens. 004's
    DecoderLayer calls pass masks in the key/value slots of its own attention signature and
    fail.""",
    falsifier=Falsifier(
        "source-mask-dropped",
        {"pass_source_mask": False},
        "the source padding mask never reaches cross-attention (as in 004's positional call)",
    ),
)
def check_encoder_decoder(ctx: Context, pass_source_mask: bool = True) -> Evidence:
    g = ctx.generator(16)
    cfg = BlockConfig(dim=32, num_heads=4, norm="pre", attention_backend="reference")
    g_init = ctx.generator(17)
    encoder = seeded(lambda: Encoder(cfg, 2), g_init)
    decoder = seeded(lambda: Decoder(cfg, 2), g_init)
    encoder.eval()
    decoder.eval()
    b, s, t = 2, 7, 6
    src = torch.randn(b, s, 32, generator=g)
    tgt = torch.randn(b, t, 32, generator=g)
    pad = torch.zeros(b, s, dtype=torch.bool)
    pad[0, 5:] = True  # the first source has 5 real tokens and 2 padded
    with torch.no_grad():
        memory = encoder(src, key_padding_mask=pad)
        mask_arg = pad if pass_source_mask else None
        out = decoder(tgt, memory, memory_key_padding_mask=mask_arg)
        # causality: change the targets after position 3
        tgt2 = tgt.clone()
        tgt2[:, 4:] += torch.randn(b, t - 4, 32, generator=g)
        out2 = decoder(tgt2, memory, memory_key_padding_mask=mask_arg)
        causal_leak = float((out2[:, :4] - out[:, :4]).abs().max())
        future_effect = float((out2[:, 4:] - out[:, 4:]).abs().max())
        # cross-attention masking: change the memory at padded positions of source 0
        memory2 = memory.clone()
        memory2[0, 5:] += 10 * torch.randn(2, 32, generator=g)
        pad_leak = float(
            (decoder(tgt, memory2, memory_key_padding_mask=mask_arg)[0] - out[0]).abs().max()
        )
        # the same size of change at each real position of source 0 must be visible; the
        # smallest effect over the 5 real positions is the margin (issue 12: one position with a
        # unit change gave 0.17-0.38 over seeds 0-4, spread 0.08, too close to its own spread)
        real_effects = []
        for j in range(5):
            memory3 = memory.clone()
            memory3[0, j] += 10 * torch.randn(32, generator=g)
            real_effects.append(float(
                (decoder(tgt, memory3, memory_key_padding_mask=mask_arg)[0] - out[0]).abs().max()
            ))
        real_effect = min(real_effects)
    shapes_ok = tuple(memory.shape) == (b, s, 32) and tuple(out.shape) == (b, t, 32)
    tgt_mask = torch.tril(torch.ones(t, t))
    src_mask = (~pad).float().view(b, 1, 1, s)
    seed_calls = _seed_call_outcomes(tgt, memory, tgt_mask, src_mask)
    seed_failures = sum(v != "ran" for v in seed_calls.values())
    margins = [
        at_least("output shapes correct", float(shapes_ok), 1.0),
        at_most("causal leak (max |change| before the edit)", causal_leak, 1e-6),
        at_least("future effect (max |change| after the edit)", future_effect, 1e-3),
        at_most("padded-source leak", pad_leak, 1e-6),
        at_least("min over real source positions of the effect", real_effect, 1e-3),
        at_least("004's calls that fail (of 2)", float(seed_failures), float(len(seed_calls))),
    ]
    ok = all_hold(margins)
    ctx.report_progress(1.0)
    return Evidence(
        predicted={"causal_leak": 0.0, "padded_source_leak": 0.0, "seed_calls": "fail"},
        measured={
            "causal_leak": float(f"{causal_leak:.2e}"),
            "padded_source_leak": float(f"{pad_leak:.2e}"),
            "future_effect": round(future_effect, 4),
            "real_source_effect": round(real_effect, 4),
            "seed_calls": seed_calls,
        },
        tolerance="leaks <= 1e-6 (masked weights are exact zeros; fp32 rounding); real effects "
        "must exceed 1e-3 (the checks can see a change): the future effect, and the smallest "
        "effect of a change of size 10 at each of the 5 real source positions (the padded-leak "
        "change has the same size)",
        verdict=agreement(ok, refutes_seed=True),
        notes=[
            "004's MultiHeadAttention is forward(query, key, value, mask=None); its DecoderLayer "
            "calls self_attn(norm1(x), tgt_mask) (the mask lands in `key`, `value` is missing) and "
            "cross_attn(norm2(x), encoder_output, src_mask) (the source mask lands in `value`, no "
            "mask is applied). The project's DecoderLayer passes is_causal=True to self-attention "
            "and memory as key and value with memory_key_padding_mask to cross-attention.",
            f"shapes: memory {tuple(memory.shape)}, decoder output {tuple(out.shape)}",
            "Issue 12: the real-source effect was one position changed by N(0, I) (0.17-0.38 over "
            "seeds 0-4, slack / spread 2.2); now each of the 5 real positions is changed by "
            "10 N(0, I), the size of the padded-position change, and the smallest effect is "
            "the margin (2.2-2.9). Threshold unchanged.",
        ],
        details={"seed_calls": seed_calls},
        margins=margins,
    )
