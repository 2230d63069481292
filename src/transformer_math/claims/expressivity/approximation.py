"""The approximation rate eps^(-d/s) (000 §8.3.4 "逼近率与深度-宽度权衡", exercise 8.3.4-4).

DeVore, Howard & Micchelli 1989; Yarotsky 2017: approximating a function of smoothness s in
dimension d to sup error eps needs about N ~ eps^(-d/s) units, i.e. eps(N) ~ N^(-s/d). The
exponent is measured on explicit approximants (``theory/approximation.py``) of functions whose
smoothness is set by construction, |x|^s and ||x||^s with the singularity inside a cell: a
one-hidden-layer ReLU network (piecewise linear, order 2), a piecewise cubic interpolant
(order 4) and a bilinear grid in d = 2 (order 2). The rate is min(s, order) / d: with the cubic
the measured exponent follows s up to 3.5, while the ReLU interpolant saturates at 2 for s = 3.5
(issue 31: the exponent must come from the function's smoothness, not the method's order).
"""

from __future__ import annotations

import math

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    Size,
    claim,
    close_to,
    decide,
)
from transformer_math.diagnostics.fits import fit_power_law
from transformer_math.i18n.message import msg
from transformer_math.theory.approximation import (
    bilinear_grid_approximant,
    neurons_for_accuracy,
    piecewise_cubic_interpolant_1d,
    rate_exponent,
    relu_interpolant_1d,
)

SEED_000_84 = "000 §8.3.4"
REL = 0.05  # tolerance on d/s, stated before the runs (pre-asymptotic curvature of the fit)


def _power(s: float):
    return lambda t: t.abs() ** s


def _one_d_cases(ctx: Context) -> dict[str, dict]:
    """Sup error of each 1-D approximant vs its size, for f = |x|^s on [-1, 1]."""
    small = ctx.size is Size.TINY
    grid = torch.linspace(-1, 1, 2001 if small else 8001, dtype=torch.float64)
    x = torch.cat([grid, torch.zeros(1, dtype=torch.float64)])  # the singular point itself
    odd = [5, 9, 17, 33] if small else [5, 9, 17, 33, 65, 129]  # odd: 0 sits mid-interval
    cases: dict[str, dict] = {}
    for s, order in ((0.5, 2), (1.5, 2), (3.5, 2)):
        errs, units = [], [m for m in (15, 31, 63, 127, 255) if m <= (127 if small else 255)]
        for m in units:
            with torch.no_grad():
                errs.append(float((relu_interpolant_1d(_power(s), m)(x[:, None])[:, 0]
                                   - _power(s)(x)).abs().max()))
        cases[f"ReLU net, |x|^{s}"] = {"dim": 1, "s": s, "order": order, "units": units,
                                       "errors": errs}
    for s in (0.5, 1.5, 2.5, 3.5):
        intervals = [3 * m for m in odd]
        errs = [float((piecewise_cubic_interpolant_1d(_power(s), n)(x) - _power(s)(x)).abs()
                      .max()) for n in intervals]
        cases[f"cubic, |x|^{s}"] = {"dim": 1, "s": s, "order": 4, "units": intervals,
                                    "errors": errs}
    return cases


def _two_d_case(ctx: Context) -> dict:
    """Bilinear grid (order 2) for f = ||x||^1.5 on [-1, 1]^2; m even: the origin is a cell
    centre at every m."""
    small = ctx.size is Size.TINY
    s = 1.5
    axis = torch.linspace(-1, 1, 201 if small else 401, dtype=torch.float64)
    yy, xx = torch.meshgrid(axis, axis, indexing="ij")
    pts = torch.cat([torch.stack([xx.flatten(), yy.flatten()], -1),
                     torch.zeros(1, 2, dtype=torch.float64)])

    def f2(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a * a + b * b) ** (s / 2)

    per_axis = [6, 10, 18, 34] if small else [6, 10, 18, 34, 66]
    errs = [float((bilinear_grid_approximant(f2, m)(pts) - f2(pts[:, 0], pts[:, 1])).abs().max())
            for m in per_axis]
    # N counted as cells (m - 1)^2, like intervals in 1-D (the m^2 grid values differ by O(1/m))
    return {"dim": 2, "s": s, "order": 2, "units": [(m - 1) ** 2 for m in per_axis],
            "errors": errs}


@claim(
    "expressivity.approximation-rate",
    source=f"{SEED_000_84} ('逼近率与深度-宽度权衡'), exercise 8.3.4-4; DeVore, Howard & "
    "Micchelli 1989; Yarotsky 2017",
    statement="""Approximating a function of smoothness s in dimension d to accuracy eps takes
    about eps^(-d/s) units (d = 10, s = 2, eps = 0.1 gives 1e5; s = 5 gives 1e2): measured on
    explicit approximants of |x|^s and ||x||^s (smoothness set by the function), the fitted
    exponent of N(eps) is d/s within 5 % for every s below the approximant's order (a ReLU
    network for s = 0.5, 1.5; a piecewise cubic for s = 0.5 to 3.5; a bilinear grid in
    d = 2 for s = 1.5), and saturates at d/order when s exceeds it (the ReLU network at
    s = 3.5: 1/2).""",
    statement_zh="""把光滑度为 s、维数为 d 的函数逼近到精度 eps 约需 eps^(-d/s) 个单元
    （d = 10、s = 2、eps = 0.1 得 1e5；s = 5 得 1e2）：在 |x|^s 与 ||x||^s（光滑度由函数本身
    设定）的显式逼近器上测得，N(eps) 的拟合指数在 s 低于逼近器阶数时都在 d/s 的 5 % 以内
    （ReLU 网络 s = 0.5、1.5；分段三次插值 s = 0.5 到 3.5；d = 2 的双线性网格 s = 1.5），
    而 s 超过阶数时饱和于 d/阶数（ReLU 网络在 s = 3.5 时为 1/2）。""",
    tier="quick",
    falsifier="approximation.relu-coeffs-not-differenced",
    expected="verified",
    version=2,
    kind="construction",
    seed_refs=[("000", 759, 769), ("000", 797, 797)],
    audit="""Issue 31 review (a: the calculator was compared with hand-copied answers of the
    same formula, and C^inf sin(3x) was labelled s = 2 so that d/s matched the method's order;
    b; d1: falsifier in theory/approximation): fixed. The calculator-vs-exercise margin is
    removed (the exercise's 1e5 and 1e2 are reported, not checked against themselves). The
    smoothness is now set by the function: |x|^s (d = 1) and ||x||^s (d = 2) with the
    singularity mid-cell at every size, for several s, and an approximant of higher order
    (piecewise cubic, order 4) beside the ReLU network (order 2): the measured exponent
    follows s (0.5 to 3.5) where s < order, and the ReLU network saturates at order 2 for
    s = 3.5 (measured 1/2, not 1/s = 0.29), which shows the check can tell the function's
    smoothness from the method's order. Kind construction (explicit approximants in theory/;
    the falsifier, output weights not differenced, is in the ReLU construction). Tolerance 5 %
    on d/s, stated before the runs; the self-similar placement makes the fits close to exact.
    Only upper bounds are measured: that eps^(-d/s) units are also needed (DeVore et al.'s
    lower bound) is cited, not measured, and d = 10 is only computed.""",
)
def check_approximation_rate(ctx: Context) -> Evidence:
    cases = _one_d_cases(ctx)
    cases["bilinear grid, ||x||^1.5 (d = 2)"] = _two_d_case(ctx)
    margins = []
    for name, c in cases.items():
        fit = fit_power_law([float(u) for u in c["units"]], c["errors"])
        c["measured_d_over_s"] = -1.0 / fit.exponent if fit.exponent < 0 else math.inf
        c["r2"] = fit.r2
        c["predicted_d_over_s"] = rate_exponent(c["dim"], min(c["s"], c["order"]))
        label = ("saturated: d / order" if c["s"] > c["order"] else "d / s")
        margins.append(close_to(f"measured d/s, {name} (predicted {label})",
                                c["measured_d_over_s"], c["predicted_d_over_s"], rel=REL))
    exercise = {"d=10,s=2,eps=0.1": neurons_for_accuracy(0.1, 10, 2),
                "d=10,s=5,eps=0.1": neurons_for_accuracy(0.1, 10, 5)}
    figure = Figure(
        title="Approximation error vs number of units (log-log); slope -min(s, order)/d",
        xlabel=msg("units / parameters N"), ylabel=msg("sup error"), logx=True, logy=True,
        series=[Series(name, [float(u) for u in c["units"]], c["errors"], style="o-")
                for name, c in cases.items()],
    )
    return Evidence(
        predicted={k: round(c["predicted_d_over_s"], 4) for k, c in cases.items()},
        measured={k: round(c["measured_d_over_s"], 4) for k, c in cases.items()},
        tolerance={"d_over_s_rel": REL},
        verdict=decide(margins),
        margins=margins,
        notes=[
            "Measured exponents: sup error (on a uniform grid plus the singular point) of "
            "explicit approximants of |x|^s and ||x||^s, fitted as N^(-s/d) by least squares in "
            "log-log. N = hidden ReLU units (= intervals), cubic intervals (N + 1 node values), "
            "or grid cells (m - 1)^2 (d = 2, m^2 values). The singularity sits at the same "
            "relative place in its cell at every N (mid-interval in 1-D, a cell centre in "
            "2-D), so the pre-asymptotic constant does not drift with N.",
            "Predicted exponent: d / min(s, order) (order 2 for the ReLU network and the "
            "bilinear grid, 4 for the cubic). The ReLU network at s = 3.5 is the control that "
            "the exponent is the function's: it saturates at d/2 = 0.5 instead of 1/3.5.",
            "Exercise 8.3.4-4 (000:797), recomputed, not a pass condition: "
            + ", ".join(f"{k}: {v:.4g}" for k, v in exercise.items()) + ".",
            "Only the attainable rate (units that suffice) is measured; the lower bound "
            "(units needed, DeVore, Howard & Micchelli 1989) is cited. d = 10 is computed only.",
            "Version 2 (issue 31): the earlier check compared the calculator with the "
            "exercise's answers (the same formula) and measured sin(3x) labelled s = 2 with a "
            "linear interpolant (order 2), so d/s matched the method, not the function.",
        ],
        figures=[figure],
        details={"cases": cases, "exercise": exercise},
    )
