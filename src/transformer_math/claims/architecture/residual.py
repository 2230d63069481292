"""Residual stacks of the project's Transformer blocks as forward Euler steps, and their
input-output Jacobians (000 §8.3.7 理论 A, exercise 8.3.7-2; Haber & Ruthotto 2017).

Both checks run the project's own stack (``Transformer.hidden_states`` over
``TransformerBlock`` s, FFN-only pre-LN blocks, float64): a block computes h + f(N h) with
f = FFN; the step size h = T / L is put into the block by scaling the FFN's output layer
(weights and bias) by T / L, so the block is x + (T/L) g(x) with g(x) = FFN(LN(x)) the vector
field of the unscaled block. The vector field and the branch Jacobians are read from the
sublayer modules themselves (``block.ffn(block.ffn_norm(x))``), not from block(x) - x, so the
residual path of the block is what is tested.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import Tensor, nn

from transformer_math.claims.architecture._common import SEED_000, loglog_slope, xavier_init_
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    Size,
    at_least,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.i18n.message import msg
from transformer_math.nn.config import TransformerConfig
from transformer_math.nn.transformer import Transformer, TransformerBlock, build_transformer
from transformer_math.theory.residual import rk4_solve

ROUNDING = 1e-9  # float64: products of <= 64 factors, relative rounding ~1e-14, bound 1e-9


def ffn_stack_config(dim: int, num_layers: int) -> TransformerConfig:
    """Vectors in, ``num_layers`` FFN-only pre-LN blocks, no final norm, no head."""
    return TransformerConfig(hidden_size=dim, num_layers=num_layers, num_heads=1,
                             sublayers="ffn_only", position="none", output_size=0,
                             final_norm=False, causal=False)


def base_blocks(dim: int, count: int, g: torch.Generator) -> Transformer:
    """A float64 stack of ``count`` blocks with Xavier-uniform FFN weights and zero biases."""
    model = build_transformer(ffn_stack_config(dim, count), g).double()
    xavier_init_(model, g)
    return model


def branch(block: TransformerBlock, x: Tensor) -> Tensor:
    """The block's residual branch f(x) = FFN(N(x)) (pre-LN), read from its sublayers."""
    assert block.ffn is not None and block.ffn_norm is not None
    return block.ffn(block.ffn_norm(x))


def scaled_block(block: TransformerBlock, step: float) -> TransformerBlock:
    """A copy of ``block`` whose branch is multiplied by ``step``: x -> x + step f(x)."""
    out = copy.deepcopy(block)
    assert out.ffn is not None
    with torch.no_grad():
        for p in out.ffn.fc_out.parameters():
            p.mul_(step)
    return out


def run_stack(model: Transformer, blocks: list[TransformerBlock], x: Tensor) -> Tensor:
    """``model``'s forward with ``blocks`` as its layers; x (d,) -> (d,)."""
    full = model.layers
    try:
        model.layers = nn.ModuleList(blocks)
        return model(inputs_embeds=x.view(1, 1, -1)).view(-1)
    finally:
        model.layers = full


def _euler_figure(depths: list[int], errors: list[float]) -> Figure:
    """Relative error of the residual stack against depth, with a 1/L reference line."""
    xs = [float(L) for L in depths]
    return Figure(
        msg("Stack of project blocks x + (T/L) FFN(LN x) vs ODE solution (forward Euler)"),
        msg("layers L"),
        msg("relative error |x_L - x(T)|"),
        [
            Series(msg("residual stack"), xs, errors, style="o-"),
            Series(msg("1/L reference"), xs, [errors[0] * depths[0] / L for L in depths],
                   style="--"),
        ],
        logx=True,
        logy=True,
    )


@claim(
    "architecture.residual-euler",
    source=f"{SEED_000} 理论 A (residual = forward Euler); Haber & Ruthotto 2017",
    statement="""A stack of L residual blocks x_{l+1} = x_l + (T/L) f(x_l) (the project's
    TransformerBlock, f = FFN(LN x)) is forward Euler for dx/dt = f(x): its output converges to
    the ODE solution x(T) with error O(1/L) (log-log slope -1).""",
    falsifier="residual.dropped",
    expected="verified",
    version=2,
    kind="measurement",
    audit="""Issue 31 review: sound; no change. A stack of the project's blocks with step T/L
    against an RK4 solution of the ODE, error ~1/L (forward Euler); the falsifier (the residual
    sum dropped) sits in nn.transformer.""",
    seed_refs=[("000", 1088, 1098)],
)
def check_residual_euler(ctx: Context) -> Evidence:
    g = ctx.generator(11)
    d, horizon = 16, 1.0
    # L = 16..256 is in the asymptotic range of the Euler error (issue 12: L = 4 bent the fit)
    depths = [16, 32, 64, 128, 256] if ctx.size is Size.TINY else [8, 16, 32, 64, 128, 256, 512]
    model = base_blocks(d, 1, g)
    block = model.layers[0]
    x0 = torch.randn(d, generator=g, dtype=torch.float64)
    with torch.no_grad():
        exact = rk4_solve(lambda x: branch(block, x), x0, horizon=horizon, num_steps=1024)
        errors = []
        for i, depth in enumerate(depths):
            step = scaled_block(block, horizon / depth)
            xl = run_stack(model, [step] * depth, x0)
            errors.append(float((xl - exact).norm() / exact.norm()))
            ctx.report_progress((i + 1) / len(depths))
    slope = loglog_slope([float(L) for L in depths], errors)
    margins = [
        close_to("log-log slope of the error vs L, distance to -1", slope, -1.0, abs_=0.1),
        at_most("error at the largest L / error at the smallest L", errors[-1] / errors[0],
                2 * depths[0] / depths[-1]),
    ]
    return Evidence(
        predicted=-1.0,
        measured=round(slope, 4),
        tolerance="slope -1 +- 0.1 (higher-order terms of the Euler error expansion); the error "
        "must fall at least half as fast as 1/L over the range",
        verdict=decide(margins),
        notes=[
            msg("Version 2 (issue 14): the stack is the project's Transformer (FFN-only pre-LN "
            "blocks, d = 16, Xavier init, float64) with the step T/L folded into each block's "
            "FFN output layer; before, a bare GeluMLP was iterated by theory.residual, so no "
            "project block ran. The reference x(T) is RK4 with 1024 steps on the block's own "
            "branch f(x) = FFN(LN(x)) (error O(h^4) ~ 1e-13, far below the Euler errors)."),
            msg("relative error at L={depths_0}: {errors_0:.3e}, at L={depths}: {errors:.3e}",
                depths_0=depths[0], errors_0=errors[0], depths=depths[-1], errors=errors[-1]),
        ],
        figures=[_euler_figure(depths, errors)],
        details={"depths": depths, "errors": errors},
        margins=margins,
    )


def _spectral(jac: Tensor) -> tuple[float, float]:
    """(largest, smallest) singular value."""
    s = torch.linalg.svdvals(jac)
    return float(s[0]), float(s[-1])


def _jacobian_figure(depths: list[int], top: list[float], bottom: list[float],
                     plain: list[float]) -> Figure:
    xs = [float(L) for L in depths]
    return Figure(
        "Input-output Jacobian of a stack of unscaled project blocks x + FFN(LN x) vs depth",
        msg("depth L"),
        msg("singular values of d x_L / d x_0"),
        [
            Series(msg("residual: largest singular value"), xs, top, style="o-"),
            Series("residual: smallest singular value", xs, bottom, style="^-"),
            Series(msg("no residual, no norm x <- FFN_l(x): largest singular value"), xs, plain,
                   style="s--"),
        ],
        logx=True,
        logy=True,
    )


# A priori (version 4, fixed before the sweep was run): "no pure exponential decay" is read as
# sigma_min(J) changing by at most a factor 2 when the depth doubles, i.e. no faster than a
# power law L^-1; an exponential e^(-r L) moves ln sigma_min by r L_max / 2 over the last
# doubling, >= 0.8 (L_max = 32) or 1.6 (L_max = 64) at the plain stack's required rate 0.05.
DOUBLING_CHANGE = math.log(2.0)
PLAIN_RATE = 0.05
# Version 4, added after the first default-size run (one stack: fall 0.81 over 32 -> 64, while
# probes of other stacks gave -0.05..1.31 per doubling): the fall is averaged over STACKS
# independent random stacks (blocks and x0), so that one stack's fluctuation (spread ~0.3 per
# doubling) does not decide a trend statement; the threshold ln 2 was not changed. Version 5:
# 32 stacks at size tiny (8 at default, as in version 4), because with 8 the tiny run's slack
# (0.10) was under three times its spread over seeds 0-4 (the project's firmness rule); with 32
# the ratio is 3.6 (slack 0.19, spread 0.054); threshold unchanged.
STACKS_BY_SIZE = (32, 8, 32)  # tiny, default, large


def _log_sigma_min(model: Transformer, blocks: list[TransformerBlock], x0: Tensor,
                   depths: list[int]) -> list[float]:
    """ln sigma_min of d x_L / d x_0 of the unscaled stack blocks[:L], for each L of depths."""
    out = []
    for depth in depths:
        jac = torch.autograd.functional.jacobian(
            lambda x, s=blocks[:depth]: run_stack(model, s, x), x0)
        out.append(math.log(_spectral(jac)[1]))
    return out


@claim(
    "architecture.residual-gradient",
    source=f"{SEED_000} 理论 A, 反面, exercise 8.3.7-2",
    statement="""In the seed's own setting, unscaled residual blocks x_{l+1} = x_l + f_l(x_l)
    (step h = 1; the project's FFN-only pre-LN blocks, f_l = FFN_l(LN x), Xavier init, d = 16),
    the input-output Jacobian is the product prod_l (I + J_l) of the branch Jacobians along the
    trajectory, and its smallest singular value does not decay exponentially with depth: over
    the last doubling of L (16 -> 32, 32 -> 64 at default size) it falls by at most a factor 2
    (ln sigma_min averaged over independent random stacks: 32 at size tiny, 8 at default);
    without residuals and norms
    (x <- FFN_l(x)) the Jacobian norm changes exponentially, at >= 0.05 per layer in log.""",
    falsifier="residual.dropped",
    expected="verified",
    version=6,
    kind="measurement",
    audit="""Issue 31 review: problem (a, e), fixed in version 3 by L-independent constants.
    Review R3 (version 3, problem): with branches scaled by 1/L and K = max_l L K_l taken from
    the same sweep, the bounds e^K, e^(-1.5 K) are implied by the chain-rule margin and cannot
    fail; the seed's unscaled x + f(x) (000:1094-1096, exercise 8.3.7-2) was never run, and the
    two arms differed in scaling as well as in the residual. Agreed; fixed (version 4): the
    1/L-scaled arm and its sweep-derived bounds are removed (the 1/L stack is
    architecture.residual-euler's subject); the stack is now the seed's unscaled x + FFN(LN x)
    at L = 1..32 (64 at default size), both arms unscaled, and the statement is what is tested:
    sigma_min(J) over the last doubling of depth changes by at most ln 2 (a threshold fixed
    before the sweep: a power law of exponent <= 1 passes, the plain stack's exponential rate
    >= 0.05 per layer would move it by >= 0.8 at L = 32), ln sigma_min averaged over 8 random
    stacks (added AFTER the first default-size run of the one-stack version failed it: fall 0.81
    on that stack, while the mean over 8 probe stacks was 0.17-0.46 per doubling, roughly
    constant from L = 8 to 128, i.e. a power law ~ L^-0.55; a single stack's fall fluctuates
    by ~0.3; the ln 2 threshold was not changed), with the chain-rule margin (two code
    paths: autograd through the stack vs prod (I + J_l) of the sublayer Jacobians) that catches
    residual.dropped. Limits said in the notes: an exponential slower than 2 ln 2 / L_max per
    layer would also pass (a finite sweep cannot tell it from a power law); the seed's
    argument is a heuristic, not a theorem (J_l = -I/2 gives 2^-L), so the verdict is about
    the project's pre-LN blocks at init, not about every residual network. Version 5 (lead,
    after the full test suite): 32 stacks at size tiny instead of 8 (default keeps 8), because
    the tiny run's slack on the ln 2 margin was under three times its spread over seeds 0-4
    (the firmness rule of tests/claims/test_margins.py); with 32 stacks slack 0.19, spread
    0.054. A variance reduction of the same estimator; threshold unchanged. Version 6: the
    statement names the stack counts (review R13: it still said 8).""",
    seed_refs=[("000", 1084, 1096), ("000", 1190, 1190)],
    statement_zh="""在种子自己的设定下，即未缩放的残差块 x_{l+1} = x_l + f_l(x_l)（步长 h = 1；
    项目的仅 FFN pre-LN block，f_l = FFN_l(LN x)，Xavier 初始化，d = 16），输入-输出 Jacobian
    是沿轨迹取的分支 Jacobian 的乘积 prod_l (I + J_l)，其最小奇异值不随深度指数衰减：在最后
    一次深度翻倍上（16 -> 32，默认规模 32 -> 64）至多减小为原来的 1/2（ln sigma_min 取独立
    随机堆叠的平均：tiny 规模 32 个，默认规模 8 个）；没有残差和归一化
    （x <- FFN_l(x)）时 Jacobian 范数随深度指数变化，对数每层变化 >= 0.05。""",
)
def check_residual_gradient(ctx: Context) -> Evidence:
    g = ctx.generator(12)
    d = 16
    depths = [1, 2, 4, 8, 16, 32] if ctx.size is Size.TINY else [1, 2, 4, 8, 16, 32, 64]
    model = base_blocks(d, max(depths), g)
    blocks = list(model.layers)
    x0 = torch.randn(d, generator=g, dtype=torch.float64)
    top, bottom, plain, branch_norm, chain_err = [], [], [], [], 0.0
    for depth in depths:
        stack = blocks[:depth]  # unscaled: x + FFN(LN x), the seed's h = 1
        jac = torch.autograd.functional.jacobian(lambda x, s=stack: run_stack(model, s, x), x0)
        hi, lo = _spectral(jac)
        x = x0
        chain = torch.eye(d, dtype=torch.float64)  # prod_l (I + J_l), J_l at x_{l-1}
        k_max = 0.0
        with torch.no_grad():
            for b in stack:
                j_l = torch.autograd.functional.jacobian(
                    lambda y, b=b: branch(b, y.view(1, 1, -1)).view(-1), x)
                chain = (torch.eye(d, dtype=torch.float64) + j_l) @ chain
                k_max = max(k_max, _spectral(j_l)[0])
                x = b(x.view(1, 1, -1)).view(-1)
        chain_err = max(chain_err, _spectral(jac - chain)[0] / hi)
        top.append(hi)
        bottom.append(lo)
        branch_norm.append(k_max)

        def composed(x: Tensor, n: int = depth) -> Tensor:
            # 000 §8.3.7 反面: residuals and normalisation removed, x_L = FFN_L(... FFN_1(x0))
            for b in blocks[:n]:
                assert b.ffn is not None
                x = b.ffn(x.view(1, 1, -1)).view(-1)
            return x

        plain.append(_spectral(torch.autograd.functional.jacobian(composed, x0))[0])
    stacks = ctx.pick(*STACKS_BY_SIZE)
    # ln sigma_min averaged over `stacks` random stacks: this one and stacks - 1 fresh ones
    curves = [[math.log(s) for s in bottom]]
    for _ in range(stacks - 1):
        other = base_blocks(d, max(depths), g)
        x_other = torch.randn(d, generator=g, dtype=torch.float64)
        curves.append(_log_sigma_min(other, list(other.layers), x_other, depths))
    mean_log = [sum(c[i] for c in curves) / stacks for i in range(len(depths))]
    ctx.report_progress(1.0)
    plain_rate = (math.log(plain[-1]) - math.log(plain[0])) / (depths[-1] - depths[0])
    half = depths.index(depths[-1] // 2)
    fall_bottom = mean_log[half] - mean_log[-1]  # > 0: sigma_min decreased (mean over stacks)
    falls = [c[half] - c[-1] for c in curves]
    rate_bottom = fall_bottom / (depths[-1] - depths[half])
    change_top = math.log(top[-1] / top[half])
    margins = [
        at_most("max over L of |J - prod_l (I + J_l)|_2 / |J|_2 (chain rule, J_l along the "
                "trajectory)", chain_err, ROUNDING),
        at_most(f"mean over {stacks} stacks of ln sigma_min(J_Lmax/2) - ln sigma_min(J_Lmax) "
                "(decay over the last doubling, <= ln 2: no faster than L^-1)",
                fall_bottom, DOUBLING_CHANGE),
        at_least("|d ln |J| / dL| without residuals and norms", abs(plain_rate), PLAIN_RATE),
    ]
    return Evidence(
        predicted={"sigma_min_fall_over_last_doubling_max": round(DOUBLING_CHANGE, 4),
                   "plain_rate_abs_min": PLAIN_RATE},
        measured={
            "residual_top": [round(r, 4) for r in top],
            "residual_bottom": [round(s, 4) for s in bottom],
            "sigma_min_fall_over_last_doubling": round(fall_bottom, 4),
            "sigma_min_fall_per_stack": [round(f, 3) for f in falls],
            "mean_log_sigma_min": [round(v, 3) for v in mean_log],
            "sigma_min_log_rate_per_layer_last_doubling": round(rate_bottom, 4),
            "plain_log_rate_per_layer": round(plain_rate, 3),
        },
        tolerance=f"ln sigma_min falls by <= ln 2 over the last doubling of L (fixed a priori); "
        f"chain rule to relative rounding {ROUNDING:g}; plain |d ln J / dL| >= {PLAIN_RATE}",
        verdict=decide(margins),
        notes=[
            "Version 2 (issue 14): branch Jacobians along the trajectory; the stack is the "
            "project's Transformer (FFN-only pre-LN blocks, d = 16, Xavier init, float64). The "
            "plain stack composes the FFN sublayers without residual and norm (the seed's 反面); "
            "with the LayerNorm kept, the composition is scale-free and its log-norm rate "
            "changed sign between seeds (-0.07..0.07).",
            "Version 3 (issue 31): constants e^K, e^(-1.5 K) for branches scaled by 1/L; review "
            "R3: implied by the chain rule with K from the same sweep. Version 4: the seed's "
            "unscaled blocks (h = 1), the bounds removed, the decay of sigma_min over the last "
            "doubling against ln 2 fixed a priori; see audit.",
            f"mean over {stacks} stacks of ln sigma_min by depth {depths}: "
            f"{[round(v, 3) for v in mean_log]}; falls per doubling "
            f"{[round(mean_log[i] - mean_log[i + 1], 3) for i in range(len(depths) - 1)]} "
            "(a power law gives a constant fall per doubling, an exponential doubles it); "
            f"per stack over the last doubling: {[round(f, 3) for f in falls]}.",
            f"First stack: sigma_min(J): {bottom[half]:.4f} (L={depths[half]}) -> {bottom[-1]:.4f} "
            f"(L={depths[-1]}); mean fall {fall_bottom:.3f} in log (rate {rate_bottom:.4f} per "
            f"layer); sigma_max(J): {top[0]:.3f} (L=1) -> {top[-1]:.3f} (L={depths[-1]}), "
            f"log-change over the last doubling {change_top:.3f} (pre-LN: |x_l| grows with l, "
            "so the branch Jacobians shrink; reported, not a margin).",
            f"largest unscaled branch norm along the trajectory: {branch_norm[-1]:.3f}; without "
            f"residuals the norm goes from {plain[0]:.3g} (L=1) to {plain[-1]:.3g} "
            f"(L={depths[-1]}), log rate {plain_rate:.3f} per layer.",
            "Limits: a slow exponential (rate below 2 ln 2 / L_max per layer) would pass too; "
            "the seed's argument is a heuristic (J_l = -I/2 gives 2^-L), so this is a statement "
            "about the project's pre-LN blocks at init.",
        ],
        figures=[_jacobian_figure(depths, top, bottom, plain)],
        details={"depths": depths, "residual": top, "sigma_min": bottom, "plain": plain,
                 "branch_norm": branch_norm},
        margins=margins,
    )
