"""ICL as implicit Bayesian inference: posterior concentration and ridge = Bayes (000 §8.3.6).

Xie et al. 2022; Raventos et al. 2023. (a) Under a discrete uniform prior over M tasks the dMMSE
posterior mass on the true task rises from 1/M towards 1 as examples accumulate. (b) Under
w ~ N(0, tau^2 I) ridge with lambda = sigma^2 / tau^2 is the posterior mean; its risk, computed
exactly given the inputs (``theory.icl_baselines.ridge_risk_given_inputs``), equals the Bayes
risk and is the lowest over a grid of lambda.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch

from transformer_math.claims.icl._shared import SOURCE
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    Tier,
    at_least,
    at_most,
    claim,
    decide,
)
from transformer_math.data.regression import make_task_pool, sample_regression
from transformer_math.i18n.message import msg
from transformer_math.theory.icl_baselines import (
    bayes_ridge_lambda,
    bayes_risk_given_inputs,
    dmmse_posterior,
    ridge_predict,
    ridge_risk_given_inputs,
)

DIM, NUM_EXAMPLES, NOISE_VAR, TAU2, NUM_TASKS = 4, 64, 0.25, 1.0, 32
K_GRID = [*range(17), 20, 24, 28, 32, 40, 48, 56, 64]  # every K up to 16, then coarser


def posterior_mass_curve(g: torch.Generator) -> list[float]:
    """Mean dMMSE posterior mass on the true task (drawn from the pool) at every K of K_GRID."""
    pool = make_task_pool(NUM_TASKS, DIM, generator=g, dtype=torch.float64)
    index = torch.randint(NUM_TASKS, (2000,), generator=g)
    x = torch.randn(2000, NUM_EXAMPLES, DIM, generator=g, dtype=torch.float64)
    y = (x @ pool[index].unsqueeze(-1)).squeeze(-1) + NOISE_VAR**0.5 * torch.randn(
        2000, NUM_EXAMPLES, generator=g, dtype=torch.float64
    )
    return [
        float(dmmse_posterior(x[:, :i], y[:, :i], pool, NOISE_VAR)
              .gather(1, index.unsqueeze(1)).mean())
        for i in K_GRID
    ]


def ridge_risks(g: torch.Generator, claimed: float) -> dict[str, Any]:
    """Exact ridge risk given (X, x_q) over a lambda grid, the Bayes risk, and a Monte Carlo
    estimate at ``claimed`` (10000 prompts of 6 context pairs)."""
    batch = sample_regression(10000, 7, DIM, generator=g, noise_var=NOISE_VAR,
                              dtype=torch.float64)
    xc, yc, xq, yq = batch.split_query()
    grid = sorted({NOISE_VAR / TAU2 * f for f in (1 / 16, 1 / 4, 1, 4, 16)} | {claimed})
    risks = [float(ridge_risk_given_inputs(xc, xq, lam, TAU2, NOISE_VAR).mean()) for lam in grid]
    bayes = float(bayes_risk_given_inputs(xc, xq, TAU2, NOISE_VAR).mean())
    err = (ridge_predict(xc, yc, xq, claimed) - yq) ** 2  # Monte Carlo over (w, noise) too
    return {"grid": grid, "risks": risks, "bayes": bayes, "risk_mc": float(err.mean()),
            "stderr": float(err.std() / math.sqrt(err.numel()))}


def bayes_figures(r: dict[str, Any], mass: list[float]) -> list[Figure]:
    return [
        Figure(
            title=msg("Ridge risk vs lambda under the Gaussian prior"),
            xlabel="lambda",
            ylabel=msg("risk"),
            logx=True,
            series=[Series(msg("ridge risk (measured)"), r["grid"], r["risks"], "line", "o-")],
            hlines=[(r["bayes"], msg("Bayes risk"))],
            vlines=[(NOISE_VAR / TAU2, "sigma^2 / tau^2")],
        ),
        Figure(
            title=msg("dMMSE posterior mass on the true task (M = {NUM_TASKS})",
                      NUM_TASKS=NUM_TASKS),
            xlabel=msg("context examples K"),
            ylabel=msg("mean posterior mass"),
            series=[Series(msg("measured"), [float(i) for i in K_GRID], mass, "line", "o-")],
            hlines=[(1.0 / NUM_TASKS, msg("prior 1/M")), (0.99, "0.99")],
        ),
    ]


NOTE_ISSUE_12 = (
    msg("issue 12 (margins over seeds 0-4 at tiny): the risk is now computed exactly given (X, "
        "x_q) from ridge_predict's linear coefficients, not only by Monte Carlo: a test 'within 4 "
        "standard errors' has a slack of (4 - |z|) standard errors whose spread is itself ~0.6 "
        "standard errors, never 3x firm (seeds 0-4: ratio 2.3). K = 32 -> 64 context pairs for the "
        "posterior mass (at K = 32 its slack over 0.99 was 1.1x the spread between pools; the mass "
        "converges exponentially in K).")
)


@claim(
    "icl.bayes-posterior",
    source=f"{SOURCE} (隐式贝叶斯推断); Xie et al. 2022; Raventos et al. 2023",
    statement="""With a discrete prior over M tasks the posterior concentrates on the true task as
    examples grow; under the Gaussian prior w ~ N(0, tau^2 I), ridge with lambda = sigma^2/tau^2 has
    the lowest risk, equal to the Bayes risk sigma^2 + E tr((X^T X / sigma^2 + I / tau^2)^{-1}).""",
    tier=Tier.QUICK,
    falsifier="icl.ridge-lambda-inverted",
    expected="verified",
    version=2,
    seed_refs=[("000", 977, 991)],
    kind="model",
    audit="""Issue 31 review (P; f, d2): every margin compares theory formulas with each other
    (ridge risk from its coefficients vs the posterior-covariance Bayes risk; the dMMSE
    posterior curve); no transformer is involved, so 000:977-991 (trained models do implicit
    Bayesian inference) is not tested, and the falsifier inverts the claimed lambda.
    Reclassified: kind model. What is verified is the analytic model the Bayesian reading rests
    on (ridge with lambda = sigma^2 / tau^2 is the Bayes estimator under the Gaussian prior; the
    discrete posterior concentrates), computed with theory/icl_baselines, whose bug
    (icl.ridge-lambda-inverted) the model kind may carry. Whether a TRAINED model behaves like
    these estimators is icl.task-diversity-transition's measurement, not this claim's.""",
)
def check_bayes_posterior(ctx: Context) -> Evidence:
    g = ctx.generator(505)
    mass = posterior_mass_curve(g)
    min_step = min(b - a for a, b in itertools.pairwise(mass))
    claimed = bayes_ridge_lambda(NOISE_VAR, TAU2)  # the library's Bayes ridge parameter
    r = ridge_risks(g, claimed)
    grid, risks, bayes = r["grid"], r["risks"], r["bayes"]
    best = grid[min(range(len(grid)), key=risks.__getitem__)]
    risk_claimed = risks[grid.index(claimed)]
    others = [v for lam, v in zip(grid, risks, strict=True) if lam != claimed]
    margins = [
        at_most("|posterior mass at K = 0 - 1/M|", abs(mass[0] - 1.0 / NUM_TASKS), 1e-12),
        at_least(f"posterior mass on the true task at K = {NUM_EXAMPLES}", mass[-1], 0.99),
        at_least("min_K (mass(K+1) - mass(K))", min_step, -0.01),
        at_least("min risk at the other lambdas - risk at the claimed lambda",
                 min(others) - risk_claimed, 0.0),
        at_most("|risk(claimed lambda) - Bayes risk| / Bayes risk (exact given X, x_q)",
                abs(risk_claimed - bayes) / bayes, 1e-9),
    ]
    return Evidence(
        predicted={"argmin_lambda": claimed, "bayes_risk": round(bayes, 4),
                   "posterior_mass_at_K": ">= 0.99 (from 1/M)"},
        measured={"argmin_lambda": best, "risk_at_claimed": round(risk_claimed, 4),
                  "posterior_mass": [round(v, 4) for v in mass]},
        tolerance="risk equal to the Bayes risk to 1e-9 relative (float64 rounding; exact given "
        f"X, x_q); posterior mass >= 0.99 at K = {NUM_EXAMPLES} and non-decreasing up to 0.01 "
        "(Monte Carlo)",
        verdict=decide(margins),
        margins=margins,
        notes=[
            msg("D = {DIM}, sigma^2 = {NOISE_VAR}, tau^2 = {TAU2}, M = {NUM_TASKS}; ridge on 6 "
                "context pairs, 10000 prompts; lambda = theory.icl_baselines.bayes_ridge_lambda = "
                "{claimed}", DIM=DIM, NOISE_VAR=NOISE_VAR, TAU2=TAU2, NUM_TASKS=NUM_TASKS,
                claimed=claimed),
            msg("version 2 (issue 14): falsifier = planted bug icl.ridge-lambda-inverted in the "
            "library (was a keyword variant of the check)"),
            msg("Monte Carlo over (w, noise) too: risk {risk_mc:.4f} +- {stderr:.4f} vs Bayes "
                "{bayes:.4f} ({value:.2f} standard errors)", risk_mc=r['risk_mc'],
                stderr=r['stderr'], bayes=bayes, value=abs(r['risk_mc'] - bayes) / r['stderr']),
            NOTE_ISSUE_12,
        ],
        figures=bayes_figures(r, mass),
        details={"lambda_grid": grid, "risks": risks, "risk_monte_carlo": r["risk_mc"],
                 "stderr": r["stderr"]},
    )
