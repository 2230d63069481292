"""The approximation rate eps^(-d/s) (000 §8.3.4 "逼近率与深度-宽度权衡", exercise 8.3.4-4).

DeVore, Howard & Micchelli 1989; Yarotsky 2017: approximating a function of smoothness s in
dimension d to sup error eps needs about N ~ eps^(-d/s) units, i.e. eps(N) ~ N^(-s/d). The
exponent is measured on explicit approximants (``theory/approximation.py``).
"""

from __future__ import annotations

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    Size,
    at_most,
    claim,
    close_to,
    decide,
)
from transformer_math.diagnostics.fits import fit_power_law
from transformer_math.theory.approximation import (
    bilinear_grid_approximant,
    neurons_for_accuracy,
    rate_exponent,
    relu_interpolant_1d,
)

SEED_000_84 = "000 §8.3.4"


def _measured_exponents(ctx: Context) -> dict[str, dict[str, float]]:
    """Fit eps(N) ~ N^(-s/d) for explicit approximants; return the measured d/s per case."""
    small = ctx.size is Size.TINY
    x = torch.linspace(-1, 1, 4001 if small else 20001, dtype=torch.float64)[:, None]
    cases = {}
    one_d = {
        "d=1,s=2 (sin 3x, ReLU net)": (lambda t: torch.sin(3 * t), 1, 2.0),
        "d=1,s=1.5 (|x|^1.5, ReLU net)": (lambda t: t.abs() ** 1.5, 1, 1.5),
    }
    units = [15, 31, 63, 127] if small else [15, 31, 63, 127, 255, 511]  # odd: 0 mid-cell
    for name, (fn, dim, s) in one_d.items():
        errs = []
        for m in units:
            with torch.no_grad():
                errs.append(float((relu_interpolant_1d(fn, m)(x) - fn(x)).abs().max()))
        fit = fit_power_law([float(m) for m in units], errs)
        cases[name] = {"dim": dim, "s": s, "measured_d_over_s": -1.0 / fit.exponent,
                       "r2": fit.r2, "units": units, "errors": errs}
    pts = torch.rand(10_000 if small else 40_000, 2, generator=ctx.generator(31),
                     dtype=torch.float64) * 2 - 1

    def f2(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.sin(2 * a) * torch.cos(3 * b)

    per_axis = [5, 9, 17, 33] if small else [5, 9, 17, 33, 65]
    errs = []
    for m in per_axis:
        approx = bilinear_grid_approximant(f2, m)
        errs.append(float((approx(pts) - f2(pts[:, 0], pts[:, 1])).abs().max()))
    params = [float(m * m) for m in per_axis]
    fit = fit_power_law(params, errs)
    cases["d=2,s=2 (sin 2x cos 3y, bilinear grid)"] = {
        "dim": 2, "s": 2.0, "measured_d_over_s": -1.0 / fit.exponent, "r2": fit.r2,
        "units": params, "errors": errs}
    return cases


@claim(
    "expressivity.approximation-rate",
    source=f"{SEED_000_84} ('逼近率与深度-宽度权衡'), exercise 8.3.4-4; DeVore, Howard & "
    "Micchelli 1989; Yarotsky 2017",
    statement="""Approximating a function of smoothness s in dimension d to accuracy eps needs
    about eps^(-d/s) units: d = 10, s = 2, eps = 0.1 gives 1e5; s = 5 gives 1e2. The exponent
    d/s is measured on explicit approximants (ReLU interpolants in d = 1, a bilinear grid in
    d = 2).""",
    tier="quick",
    falsifier="approximation.relu-coeffs-not-differenced",
    expected="verified",
    version=1,
    seed_refs=[("000", 759, 769), ("000", 797, 797)],
)
def check_approximation_rate(ctx: Context) -> Evidence:
    rule = rate_exponent
    exercise_answers = {"d=10,s=2,eps=0.1": 1e5, "d=10,s=5,eps=0.1": 1e2}  # exercise 8.3.4-4
    calculator = {"d=10,s=2,eps=0.1": neurons_for_accuracy(0.1, 10, 2),
                  "d=10,s=5,eps=0.1": neurons_for_accuracy(0.1, 10, 5)}
    cases = _measured_exponents(ctx)
    rel = 0.05
    exponent_margins = {
        name: close_to(f"measured d/s, {name}", c["measured_d_over_s"], rule(c["dim"], c["s"]),
                       rel=rel)
        for name, c in cases.items()
    }
    exponent_ok = {name: m.holds for name, m in exponent_margins.items()}
    calc_err = max(abs(calculator[k] - v) / abs(v) for k, v in exercise_answers.items())
    calc_ok = calc_err <= 1e-9
    margins = [at_most("max relative error of the calculator vs the exercise's answers",
                       calc_err, 1e-9), *exponent_margins.values()]
    figure = Figure(
        title="Approximation error vs number of units (log-log); slope -s/d",
        xlabel="units / parameters N", ylabel="sup error", logx=True, logy=True,
        series=[Series(name, [float(u) for u in c["units"]], c["errors"], style="o-")
                for name, c in cases.items()],
    )
    return Evidence(
        predicted={"exercise": exercise_answers,
                   "d_over_s": {k: rule(c["dim"], c["s"]) for k, c in cases.items()}},
        measured={"calculator": calculator,
                  "d_over_s": {k: round(c["measured_d_over_s"], 4) for k, c in cases.items()}},
        tolerance={"calculator_rel": 1e-9, "exponent_rel": rel},
        verdict=decide(margins),
        margins=margins,
        notes=[
            "The exercise's numbers are the calculator's (theory/approximation.py) evaluated at "
            "the exercise's inputs and compared with the recorded answers 1e5 and 1e2.",
            "Measured exponents: sup error of explicit approximants fitted as N^(-s/d) by least "
            "squares in log-log; N = hidden ReLU units (d = 1) or grid values (d = 2). The "
            "|x|^1.5 case uses an odd number of segments so the kink sits mid-cell (no lucky "
            "alignment).",
            "Tolerance 5 % on d/s: pre-asymptotic curvature of the log-log fit over N = 15..511 "
            "(the measured fits have R^2 > 0.999).",
            "This measures the rate of grid/interpolation schemes in d <= 2; d = 10 is only "
            "computed, not measured (1e5 units are easy, but a sup error in 10-D is not).",
            "Issue 14: the falsifier is a bug planted in the ReLU interpolant of "
            "theory/approximation.py (output weights = slopes instead of slope changes), which "
            "the measured exponents must catch; before, it swapped the predicted rule.",
        ],
        figures=[figure],
        details={"cases": cases, "calculator_ok": calc_ok, "exponent_ok": exponent_ok},
    )
