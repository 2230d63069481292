"""Normalisation: LayerNorm / RMSNorm geometry and the Pre-LN vs Post-LN gradient scale at
initialisation (000 §8.3.7 理论 B; Zhang & Sennrich 2019; Xiong et al. 2020)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from transformer_math.claims.architecture._common import SEED_000, loglog_slope, xavier_init_
from transformer_math.claims.registry import (
    Context,
    Correction,
    Evidence,
    Figure,
    Series,
    Size,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.claims.seeds import PerSeed, over_seeds
from transformer_math.functional.norms import layer_norm, rms_norm
from transformer_math.i18n.message import msg
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.init import seeded
from transformer_math.nn.transformer import Transformer


def _geometry_figure(y_ln: Tensor, y_rms: Tensor, root: float) -> Figure:
    """Scatter of output mean against |y| / sqrt(d) for both norms."""
    return Figure(
        msg("Normalised vectors: mean vs norm / sqrt(d)"),
        msg("mean of output"),
        "|y| / sqrt(d)",
        [
            Series("LayerNorm", y_ln.mean(-1).tolist(), (y_ln.norm(dim=-1) / root).tolist(),
                   kind="scatter"),
            Series("RMSNorm", y_rms.mean(-1).tolist(), (y_rms.norm(dim=-1) / root).tolist(),
                   kind="scatter"),
        ],
    )


def _depth_figure(depths: list[int], curves: dict[str, list[float]]) -> Figure:
    """Last-layer gradient norm against depth for both placements (seed 0), log-log."""
    xs = [float(L) for L in depths]
    return Figure(
        msg("|dLoss / dW2| of the last layer at initialisation vs depth (Xiong et al. Thm. 1)"),
        msg("layers L"),
        "|dLoss / dW2_L|_F",
        [Series(msg("Pre-LN (theory: L^-1/2)"), xs, curves["pre"], style="o-"),
         Series(msg("Post-LN (theory: L^0)"), xs, curves["post"], style="s-")],
        logx=True,
        logy=True,
    )


@claim(
    "architecture.layernorm-geometry",
    source=f"{SEED_000} 理论 B and RMSNorm (深化); Zhang & Sennrich 2019",
    statement="""LayerNorm output has mean 0 and norm sqrt(d) and is invariant to x -> a x + b;
    RMSNorm output has norm sqrt(d) and is invariant to x -> a x but not to a shift x -> x + b.""",
    falsifier="norm.layernorm-no-centering",
    expected="verified",
    version=1,
    kind="measurement",
    audit="""Issue 31 review: sound; no change. Invariances of the library's LayerNorm and
    RMSNorm (functional.norms, where the falsifier sits) measured in float64 against the
    geometry of 000:1100-1112.""",
    seed_refs=[("000", 1100, 1112)],
)
def check_layernorm_geometry(ctx: Context) -> Evidence:
    g = ctx.generator(13)
    d = 64
    count = 64 if ctx.size is Size.TINY else 512
    z = torch.randn(count, d, generator=g, dtype=torch.float64)
    a = 10 ** (torch.rand(count, 1, generator=g, dtype=torch.float64) * 3 - 1)  # 0.1 .. 100
    b = torch.randn(count, 1, generator=g, dtype=torch.float64) * 5
    # nonzero means on a fixed grid in [-2, 2] (issue 12: drawn N(0, 1) means made the smallest
    # shift change, set by the largest |mean| drawn, vary 0.71-1.23 over seeds 0-4)
    x = z + torch.linspace(-2.0, 2.0, count, dtype=torch.float64).unsqueeze(-1)
    ln = layer_norm
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
        verdict=decide(margins),
        notes=[
            msg("float64 inputs z + c (z ~ N(0, I), row means c on a grid in [-2, 2]), scales a in "
                "[0.1, 100] and shifts b ~ N(0, 25); the project's functional layer_norm / "
                "rms_norm with their default eps."),
            msg("Issue 12: the row means were N(0, 1) draws; the smallest RMSNorm shift change is "
                "set by the largest |mean| and varied 0.71-1.23 over seeds 0-4 (slack/spread 2.9 < "
                "3). A fixed grid of means removes that extreme-value noise; thresholds "
                "unchanged."),
        ],
        figures=[_geometry_figure(y_ln[sample], y_rms[sample], root)],
        details={"d": d, "samples": count},
        margins=margins,
    )


def grad_profile_model(norm: str, depth: int, *, dim: int, vocab: int) -> TransformerConfig:
    """The stack of Xiong et al.'s Fig. 3 as a preset: vectors in, ``depth`` causal blocks with
    the norm ``norm`` (pre | post), a final LayerNorm for pre, a linear head with bias."""
    return TransformerConfig(hidden_size=dim, num_layers=depth, num_heads=4,
                             norm_placement=norm, attention_backend="reference", position="none",
                             output_size=vocab, head_bias=True, causal=True)


def last_layer_grads(
    norm: str, depths: list[int], g: torch.Generator, draws: int, *, dim: int, seq: int,
    batch: int, vocab: int,
) -> dict[int, list[float]]:
    """For each depth L: |dLoss/dW2| of the last block's FFN output weight, for ``draws``
    independent Xavier draws (every Linear redrawn from ``g``; norms stay gamma = 1, beta = 0).

    One model of max(depths) blocks is built; depth L runs its first L blocks (then the final
    norm and the head), which is the L-block model (blocks do not depend on the depth)."""
    model = seeded(lambda: Transformer(grad_profile_model(norm, max(depths), dim=dim,
                                                          vocab=vocab)), g)
    blocks = model.layers
    out: dict[int, list[float]] = {}
    try:
        for depth in depths:
            model.layers = nn.ModuleList(blocks[:depth])
            out[depth] = []
            for _ in range(draws):
                xavier_init_(model, g)
                model.zero_grad(set_to_none=True)
                x = torch.randn(batch, seq, dim, generator=g)
                y = torch.randint(0, vocab, (batch, seq), generator=g)
                logits = model(inputs_embeds=x)
                nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1)).backward()
                ffn = model.layers[-1].ffn
                assert ffn is not None and ffn.fc_out.weight.grad is not None
                out[depth].append(float(ffn.fc_out.weight.grad.norm()))
    finally:
        model.layers = blocks
    return out


def last_layer_grad_profile(
    norm: str, depth: int, g: torch.Generator, *, dim: int, seq: int, batch: int, vocab: int
) -> list[float]:
    """|dLoss/dW2| of each block's FFN output weight at initialisation (Xiong et al. Fig. 3)."""
    model = seeded(lambda: Transformer(grad_profile_model(norm, depth, dim=dim, vocab=vocab)), g)
    xavier_init_(model, g)  # blocks, then the head (module order)
    x = torch.randn(batch, seq, dim, generator=g)
    y = torch.randint(0, vocab, (batch, seq), generator=g)
    logits = model(inputs_embeds=x)
    nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1)).backward()
    grads = []
    for layer in model.layers:
        ffn = layer.ffn
        assert ffn is not None and ffn.fc_out.weight.grad is not None
        grads.append(float(ffn.fc_out.weight.grad.norm()))
    return grads


GRAD_DEPTHS = [2, 4, 8, 16]
GRAD_SHAPE = {"dim": 64, "seq": 16, "batch": 4, "vocab": 64}
GRAD_DRAWS = 3  # initialisation draws per (placement, depth) and seed
SLOPE_BAND = 0.25  # half the distance between the two predicted slopes, 0 and -1/2


def last_layer_slopes(ctx: Context) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Log-log slopes in L of the mean (over ``GRAD_DRAWS`` Xavier draws) of |dLoss/dW2| of the
    last block's FFN output weight, for Pre-LN and Post-LN; and the curves."""
    curves: dict[str, list[float]] = {"pre": [], "post": []}
    for arm_index, norm in enumerate(("pre", "post")):
        grads = last_layer_grads(norm, GRAD_DEPTHS, ctx.generator(10_000 * (arm_index + 1)),
                                 GRAD_DRAWS, **GRAD_SHAPE)
        curves[norm] = [sum(grads[L]) / len(grads[L]) for L in GRAD_DEPTHS]
    xs = [float(L) for L in GRAD_DEPTHS]
    return {"pre_slope": loglog_slope(xs, curves["pre"]),
            "post_slope": loglog_slope(xs, curves["post"])}, curves


@claim(
    "architecture.pre-vs-post-norm",
    source=f"{SEED_000} Pre-LN vs Post-LN; 004 Pre-Norm vs Post-Norm; Xiong et al. 2020, Thm. 1",
    statement="""At initialisation the gradient of the last layer's FFN weight, |dL/dW2_L|_F,
    is O(d sqrt(ln d)) for Post-LN, independent of the depth L, and O(d sqrt(ln d / L)) for
    Pre-LN (Xiong et al. 2020, Theorem 1): on the project's Transformer its log-log slope in L
    is nearer 0 than -1/2 for Post-LN and nearer -1/2 than 0 for Pre-LN, on every seed.""",
    falsifier="norm.pre-ln-as-post-ln",
    expected="verified",
    version=2,
    kind="measurement",
    audit="""Issue 31 review: sound; no change. Gradient-norm slopes in depth of the project's
    Transformer in Pre-LN and Post-LN placement; the bands +-1/4 are half the gap between the
    two predictions, fixed before the falsifier (Pre-LN placed as Post-LN in nn.transformer).""",
    seed_refs=[("000", 1114, 1114), ("004", 369, 375)],
    corrections=[
        Correction(
            seed="004", line=1079,
            says="Nguyen, Salazar. 'Transformers without Normalization'. 2023.",
            correct="'Transformers without Normalization' is Zhu, Chen, He, LeCun and Liu (CVPR "
            "2025; Dynamic Tanh, DyT(x) = gamma * tanh(alpha x) + beta, replaces the norm "
            "layers); Nguyen and Salazar wrote 'Transformers without Tears: Improving the "
            "Normalization of Self-Attention' (IWSLT 2019: PreNorm, ScaleNorm)",
            source="Zhu et al., CVPR 2025 (arXiv 2503.10622), title page; Nguyen & Salazar, "
            "IWSLT 2019 (arXiv 1910.05895), title page; FACTS.md"),
        Correction(
            seed="004", line=375,
            says="studies show Pre-Norm keeps gradients stable in deep networks [footnote 1: "
            "Nguyen & Salazar, 'Transformers without Normalization', 2023]",
            correct="the supporting sources are Nguyen & Salazar 2019 ('Transformers without "
            "Tears', PreNorm trains without warm-up) and Xiong et al. 2020 (Theorem 1, "
            "checked by this claim); the cited title belongs to Zhu et al. 2025, a paper that "
            "removes normalisation altogether",
            source="Nguyen & Salazar 2019 (arXiv 1910.05895); Xiong et al. 2020 (ICML, arXiv "
            "2002.04745); Zhu et al. 2025 (arXiv 2503.10622)"),
    ],
)
def check_pre_vs_post_norm(ctx: Context) -> Evidence:
    sweep: PerSeed = over_seeds(ctx, last_layer_slopes)
    margins = [
        sweep.at_least("pre_slope", -0.5 - SLOPE_BAND, "Pre-LN slope >= -3/4"),
        sweep.at_most("pre_slope", -0.5 + SLOPE_BAND, "Pre-LN slope <= -1/4"),
        sweep.at_least("post_slope", -SLOPE_BAND, "Post-LN slope >= -1/4"),
        sweep.at_most("post_slope", SLOPE_BAND, "Post-LN slope <= 1/4"),
    ]
    curves = sweep.runs[0]
    return Evidence(
        predicted={"pre_slope": -0.5, "post_slope": 0.0},
        measured={"pre_slope": {"mean": round(sweep.mean("pre_slope"), 3),
                                "min": round(sweep.lo("pre_slope"), 3),
                                "max": round(sweep.hi("pre_slope"), 3)},
                  "post_slope": {"mean": round(sweep.mean("post_slope"), 3),
                                 "min": round(sweep.lo("post_slope"), 3),
                                 "max": round(sweep.hi("post_slope"), 3)}},
        tolerance=f"slopes within {SLOPE_BAND} of the prediction (half the gap between 0 and "
        "-1/2: each placement is nearer its own prediction than the other's), on every seed",
        verdict=decide(margins),
        margins=margins,
        per_seed=sweep.to_json(),
        notes=[
            msg("Version 2 (issue 14): Theorem 1 bounds the gradient of the LAST layer's "
                "parameters: Post-LN O(d sqrt(ln d)) whatever L, Pre-LN O(d sqrt(ln d / L)). The "
                "former check leaned on a Post/Pre ratio growing like sqrt(L) near the output and "
                "seeded both arms identically (its falsifier gave ratios of exactly 1 whatever the "
                "slopes). Now each placement's own slope is measured, with independent draws per "
                "arm."),
            msg("|dLoss/dW2| of the last block's FFN output weight, mean of {draws} Xavier draws "
                "per depth L in {depths}, project blocks (d = {dim}, 4 heads, causal, a final "
                "LayerNorm for Pre-LN), cross-entropy through a linear head on random vectors; "
                "{seeds} seeds, the pass condition on the worst.", draws=GRAD_DRAWS,
                depths=GRAD_DEPTHS, dim=GRAD_SHAPE['dim'], seeds=len(sweep.seeds)),
            msg("First sweep (5 seeds, 2 draws): Pre-LN -0.35..-0.44, Post-LN 0.05..0.16 (Post-LN "
                "grows slightly: the theorem is a bound independent of L, not an equality)."),
        ],
        figures=[_depth_figure(GRAD_DEPTHS, curves)],
        details={"depths": GRAD_DEPTHS, "curves_seed0": curves},
    )
