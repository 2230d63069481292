"""Normalisation: LayerNorm / RMSNorm geometry and the Pre-LN vs Post-LN gradient scale at
initialisation (000 §8.3.7 理论 B; Zhang & Sennrich 2019; Xiong et al. 2020)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from transformer_math.claims.architecture._common import SEED_000, loglog_slope, xavier_init_
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
from transformer_math.functional.norms import layer_norm, rms_norm
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.init import seeded
from transformer_math.nn.transformer import Transformer


def _geometry_figure(y_ln: Tensor, y_rms: Tensor, root: float, layernorm: str) -> Figure:
    """Scatter of output mean against |y| / sqrt(d) for both norms."""
    return Figure(
        "Normalised vectors: mean vs norm / sqrt(d)",
        "mean of output",
        "|y| / sqrt(d)",
        [
            Series("LayerNorm" if layernorm == "layer" else "LayerNorm without centring",
                   y_ln.mean(-1).tolist(), (y_ln.norm(dim=-1) / root).tolist(), kind="scatter"),
            Series("RMSNorm", y_rms.mean(-1).tolist(), (y_rms.norm(dim=-1) / root).tolist(),
                   kind="scatter"),
        ],
    )


def _profile_figure(depth: int, profiles: dict[str, list[float]], pre_arm: str) -> Figure:
    """Per-layer gradient norms of the two arms at the largest depth."""
    layers = [float(j + 1) for j in range(depth)]
    return Figure(
        f"Gradient norm by layer at initialisation (L = {depth})",
        "layer",
        "|dLoss / dW2|",
        [
            Series("Pre-LN" if pre_arm == "pre" else "Pre-LN arm (post placement)", layers,
                   profiles["pre"], style="o-"),
            Series("Post-LN", layers, profiles["post"], style="s-"),
        ],
    )


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
        figures=[_geometry_figure(y_ln[sample], y_rms[sample], root, layernorm)],
        details={"d": d, "samples": count},
        margins=margins,
    )


def grad_profile_model(norm: str, depth: int, *, dim: int, vocab: int) -> TransformerConfig:
    """The stack of Xiong et al.'s Fig. 3 as a preset: vectors in, ``depth`` causal blocks with
    the norm ``norm`` (pre | post), a final LayerNorm for pre, a linear head with bias."""
    return TransformerConfig(hidden_size=dim, num_layers=depth, num_heads=4,
                             norm_placement=norm, attention_backend="reference", position="none",
                             output_size=vocab, head_bias=True, causal=True)


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
                last_layer_grad_profile(norm, depth, ctx.generator(100 * s + depth), **shape)
                for s in range(seeds)
            ]
            mean_profile = [sum(r[j] for r in runs) / seeds for j in range(depth)]
            last[arm].append(sum(mean_profile[-2:]) / 2)  # the two layers nearest the output
            if depth == depths[-1]:
                profiles[arm] = mean_profile
        ctx.report_progress((i + 1) / len(depths))
    ratios = [po / pr for po, pr in zip(last["post"], last["pre"], strict=True)]
    slope_ratio = loglog_slope([float(L) for L in depths], ratios)
    slope_pre = loglog_slope([float(L) for L in depths], last["pre"])
    margins = [
        close_to("Post/Pre log-log slope, distance to 0.5", slope_ratio, 0.5, abs_=0.25),
        close_to("Pre-LN last-layer log-log slope, distance to -0.5", slope_pre, -0.5, abs_=0.25),
        at_least("min over L of Post/Pre", min(ratios), 1.0),
    ]
    ok = all_hold(margins)
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
        figures=[_profile_figure(depths[-1], profiles, pre_arm)],
        details={"depths": depths, "last_layer_pre": last["pre"], "last_layer_post": last["post"]},
        margins=margins,
    )
