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
        "Stack of project blocks x + (T/L) FFN(LN x) vs ODE solution (forward Euler)",
        "layers L",
        "relative error |x_L - x(T)|",
        [
            Series("residual stack", xs, errors, style="o-"),
            Series("1/L reference", xs, [errors[0] * depths[0] / L for L in depths], style="--"),
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
            "Version 2 (issue 14): the stack is the project's Transformer (FFN-only pre-LN "
            "blocks, d = 16, Xavier init, float64) with the step T/L folded into each block's "
            "FFN output layer; before, a bare GeluMLP was iterated by theory.residual, so no "
            "project block ran. The reference x(T) is RK4 with 1024 steps on the block's own "
            "branch f(x) = FFN(LN(x)) (error O(h^4) ~ 1e-13, far below the Euler errors).",
            f"relative error at L={depths[0]}: {errors[0]:.3e}, "
            f"at L={depths[-1]}: {errors[-1]:.3e}",
        ],
        figures=[_euler_figure(depths, errors)],
        details={"depths": depths, "errors": errors},
        margins=margins,
    )


def _spectral(jac: Tensor) -> tuple[float, float]:
    """(largest, smallest) singular value."""
    s = torch.linalg.svdvals(jac)
    return float(s[0]), float(s[-1])


def _jacobian_figure(depths: list[int], res: list[float], lo: list[float], hi: list[float],
                     plain: list[float]) -> Figure:
    xs = [float(L) for L in depths]
    return Figure(
        "Input-output Jacobian of a stack of project blocks vs depth",
        "depth L",
        "singular values of d x_L / d x_0",
        [
            Series("residual: largest singular value", xs, res, style="o-"),
            Series("bound prod (1 + K_l)", xs, hi, style="--"),
            Series("bound prod (1 - K_l) (smallest singular value)", xs, lo, style=":"),
            Series("no residual, no norm x <- FFN_l(x): largest singular value", xs, plain,
                   style="s--"),
        ],
        logy=True,
    )


@claim(
    "architecture.residual-gradient",
    source=f"{SEED_000} 理论 A, 反面, exercise 8.3.7-2",
    statement="""With residuals (x + (T/L) f_l(x), the project's blocks) the input-output
    Jacobian is the product prod_l (I + J_l) of the branch Jacobians taken along the trajectory,
    and its singular values stay within constants independent of the depth L: sigma_max <=
    e^K and sigma_min >= e^(-1.5 K) for L >= 2 K (K the largest unscaled branch norm), across
    L = 1..32 (64 at default size), with a log-change below 1/8 over the last doubling of L;
    without residuals and norms (x <- FFN_l(x)) its norm changes exponentially with depth.""",
    falsifier="residual.dropped",
    expected="verified",
    version=3,
    kind="measurement",
    audit="""Issue 31 review: problem (a, e): the submultiplicativity/Weyl margins held for any
    matrices (0.86 <= 1, 0.52 <= 1) and "prod (1 - K_l) >= 0" was >= 0 by construction, so the
    statement's "O(1) across depth" was never tested. Fixed as the review suggests: the
    margins now require sigma_min(J) >= c > 0 and sigma_max(J) <= C with c, C independent of
    L, fixed from the branch norms before the sweep (C = e^K from prod (1 + K/L) <= e^K; c =
    e^(-1.5 K) from (1 - x) >= e^(-x - x^2) for x = K/L <= 1/2, hence for L >= 2 K), over the
    depth sweep, and a bounded trend: |ln sigma(L_max) - ln sigma(L_max / 2)| <= 1/8 for both
    the largest and the smallest singular value (an exponential rate would move it by r L_max / 2;
    the plain stack's rate >= 0.05 per layer moves it by >= 0.8). The chain-rule margin (which
    catches residual.dropped) and the no-residual rate are kept. The bounds are still implied by
    the chain rule and the measured K; what is measured is that K (the branch norms of the
    project's blocks) stays O(1)/L and the sweep's singular values stay inside them.""",
    seed_refs=[("000", 1084, 1096), ("000", 1190, 1190)],
    statement_zh="""有残差时（x + (T/L) f_l(x)，项目的 block），输入-输出 Jacobian 是沿轨迹取的分支
    Jacobian 的乘积 prod_l (I + J_l)，其奇异值被与深度 L 无关的常数界住：sigma_max <= e^K，
    L >= 2 K 时 sigma_min >= e^(-1.5 K)（K 为未缩放分支范数的最大值），L = 1..32（默认规模 64），
    且在最后一次深度翻倍上对数变化小于 1/8；没有残差和归一化（x <- FFN_l(x)）时其范数随深度
    指数变化。""",
)
def check_residual_gradient(ctx: Context) -> Evidence:
    g = ctx.generator(12)
    d = 16
    depths = [1, 2, 4, 8, 16, 32] if ctx.size is Size.TINY else [1, 2, 4, 8, 16, 32, 64]
    model = base_blocks(d, max(depths), g)
    blocks = list(model.layers)
    x0 = torch.randn(d, generator=g, dtype=torch.float64)
    res, sig_min, upper, lower, plain, k_max, chain_err = [], [], [], [], [], 0.0, 0.0
    for depth in depths:
        stack = [scaled_block(b, 1.0 / depth) for b in blocks[:depth]]
        jac = torch.autograd.functional.jacobian(lambda x, s=stack: run_stack(model, s, x), x0)
        top, bottom = _spectral(jac)
        # branch norms K_l = |J_{f_l}(x_{l-1})|_2 along the trajectory x_l = block_l(x_{l-1})
        hi, lo, x = 1.0, 1.0, x0
        chain = torch.eye(d, dtype=torch.float64)  # prod_l (I + J_l), J_l at x_{l-1}
        with torch.no_grad():
            for b in stack:
                j_l = torch.autograd.functional.jacobian(
                    lambda y, b=b: branch(b, y.view(1, 1, -1)).view(-1), x)
                chain = (torch.eye(d, dtype=torch.float64) + j_l) @ chain
                k = _spectral(j_l)[0]
                k_max = max(k_max, k * depth)
                hi, lo = hi * (1 + k), lo * max(0.0, 1 - k)  # Weyl: s_min(I + J) >= 1 - |J|
                x = b(x.view(1, 1, -1)).view(-1)
        chain_err = max(chain_err, _spectral(jac - chain)[0] / top)
        res.append(top)
        sig_min.append(bottom)
        upper.append(hi)
        lower.append(lo)

        def composed(x: Tensor, n: int = depth) -> Tensor:
            # 000 §8.3.7 反面: residuals and normalisation removed, x_L = FFN_L(... FFN_1(x0))
            for b in blocks[:n]:
                assert b.ffn is not None
                x = b.ffn(x.view(1, 1, -1)).view(-1)
            return x

        plain.append(_spectral(torch.autograd.functional.jacobian(composed, x0))[0])
    ctx.report_progress(1.0)
    plain_rate = (math.log(plain[-1]) - math.log(plain[0])) / (depths[-1] - depths[0])
    big_c, small_c = math.exp(k_max), math.exp(-1.5 * k_max)  # L-independent, from K
    deep = [i for i, depth in enumerate(depths) if depth >= 2 * k_max]
    half = depths.index(depths[-1] // 2)
    change_top = abs(math.log(res[-1] / res[half]))
    change_bottom = abs(math.log(sig_min[-1] / sig_min[half]))
    margins = [
        at_most("max over L of |J - prod_l (I + J_l)|_2 / |J|_2 (chain rule, J_l along the "
                "trajectory)", chain_err, ROUNDING),
        at_most("max over L of sigma_max(J) / e^K (C = e^K independent of L)",
                max(res) / big_c, 1 + ROUNDING),
        at_most("|ln sigma_max(J_Lmax) - ln sigma_max(J_Lmax/2)| (no trend in depth)",
                change_top, 0.125),
        at_most("|ln sigma_min(J_Lmax) - ln sigma_min(J_Lmax/2)| (no trend in depth)",
                change_bottom, 0.125),
        at_least("|d ln |J| / dL| without residuals", abs(plain_rate), 0.05),
    ]
    # no depth L >= 2 K: the largest depth alone, and the decisive margin below makes the
    # verdict inconclusive (the lower constant is only implied for L >= 2 K)
    margins.insert(2, at_least(
        "min over L >= 2K of sigma_min(J) / e^(-1.5 K) (c = e^(-1.5 K) > 0 independent of L)",
        min(sig_min[i] for i in (deep or [len(depths) - 1])) / small_c, 1.0))
    # the sweep must reach depths where the lower constant applies (L >= 2 K) on >= 3 depths
    decisive = [at_least("depths of the sweep with L >= 2 K", len(deep), 3)]
    return Evidence(
        predicted={"residual_singular_values_within": "[e^(-1.5 K), e^K] for every L",
                   "K": round(k_max, 4), "plain_rate_abs_min": 0.05},
        measured={
            "residual_top": [round(r, 4) for r in res],
            "residual_bottom": [round(s, 4) for s in sig_min],
            "bound_hi": [round(u, 4) for u in upper],
            "bound_lo": [round(lo, 4) for lo in lower],
            "plain_log_rate_per_layer": round(plain_rate, 3),
        },
        tolerance=f"constants e^K, e^(-1.5 K) fixed from the branch norms (independent of L); "
        f"log-change over the last doubling <= 1/8; relative rounding {ROUNDING:g}; plain "
        f"|d ln J / dL| >= 0.05",
        verdict=decide(margins, decisive=decisive),
        decisive=decisive,
        notes=[
            "Version 2 (issue 14): the former bound used the branch Jacobians at x0 only (the "
            "chain rule takes each at its own layer's input) and e^-K as the lower bound, "
            "which is not implied; (1 - K/L)^L is. Now K_l = |J_{f_l}(x_{l-1})|_2 along the "
            "trajectory, the bounds are prod (1 + K_l) and prod max(0, 1 - K_l) (Weyl), and the "
            "stack is the project's Transformer (FFN-only pre-LN blocks, d = 16, Xavier init, "
            "float64, branch / L). The plain stack composes the FFN sublayers without residual "
            "and norm (the seed's 反面); with the LayerNorm kept, the composition is "
            "scale-free and its log-norm rate changed sign between seeds (-0.07..0.07).",
            "Version 3 (issue 31): the product bounds (true for any matrices) are replaced by "
            "constants independent of L, e^K and e^(-1.5 K) (for L >= 2 K), and by the "
            "log-change over the last doubling of depth; see audit.",
            f"K = max_l L K_l = {k_max:.3f} (the unscaled branch norm): C = {big_c:.3f}, c = "
            f"{small_c:.3f}; log-change over the last doubling: top {change_top:.3f}, bottom "
            f"{change_bottom:.3f}.",
            f"max_l L K_l = {k_max:.3f} (the unscaled branch norm); without residuals the norm "
            f"goes from {plain[0]:.3g} (L=1) to {plain[-1]:.3g} (L={depths[-1]}).",
        ],
        figures=[_jacobian_figure(depths, res, lower, upper, plain)],
        details={"depths": depths, "residual": res, "sigma_min": sig_min, "upper": upper,
                 "lower": lower, "plain": plain},
        margins=margins,
    )
