"""Trained one-layer linear self-attention: one GD step (von Oswald et al. 2023) and, under
non-isotropic inputs, GD preconditioned by Gamma^{-1} (Ahn et al. 2023, Thm. 1); 000 §8.3.6.

The runs are ``experiments.icl_gd`` and ``experiments.icl_preconditioner``. Each splits into a
memoised ``train`` that never queries the theory (line search, ``gd_predict``, Gamma^{-1}) and a
comparison with the theory computed from it, so a claim and its falsifier (a bug planted in the
theory) train once (issue 19).
"""

from __future__ import annotations

import math

import torch

from transformer_math.claims.icl._shared import SOURCE, preset, run_experiment
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Refutation,
    Series,
    Tier,
    at_most,
    claim,
    decide,
)
from transformer_math.claims.seeds import over_seeds
from transformer_math.experiments import icl_gd, icl_preconditioner
from transformer_math.theory.icl_construction import ahn_gamma, ahn_optimal_preconditioner


def gd_figure(r: icl_gd.ICLGDResult) -> Figure:
    steps = [float(s) for s in r.steps]
    return Figure(
        title="Trained linear self-attention vs one GD step (first seed)",
        xlabel="training step",
        ylabel="value",
        series=[
            Series("cosine of d y_hat / d x_q", steps, r.cosine),
            Series("model loss", steps, r.model_loss),
            Series("GD loss (line-searched eta)", steps, [r.gd_loss] * len(steps), "line", "--"),
        ],
        hlines=[(0.99, "0.99")],
    )


# Frozen in version 2 from a sweep of seeds 0-4 at tiny (see the claim's notes).
REL_RMS_MAX = 0.1


@claim(
    "icl.trained-matches-gd",
    source=f"{SOURCE}; von Oswald et al. 2023, §4 (d = 10, N = 10, x ~ U(-1, 1)^d)",
    statement="""A one-layer linear self-attention model trained on in-context linear regression
    agrees with one step of GD with the line-searched step eta*: the cosine of d(y_hat)/d(x_q)
    between the two is >= 0.99, the model's predictions differ from GD(eta*)'s by at most 10 %
    (relative RMS), and GD with eta* fits them better than GD with 0.8 eta* or 1.25 eta*
    (every seed).""",
    tier=Tier.FULL,
    falsifier="icl.line-search-eta-per-pair",
    expected="verified",
    version=2,
    seed_refs=[("000", 925, 947), ("000", 975, 975)],
)
def check_trained_matches_gd(ctx: Context) -> Evidence:
    def one(c: Context) -> tuple[dict[str, float], icl_gd.ICLGDResult]:
        r = run_experiment(icl_gd, preset(icl_gd.ICLGDConfig, c), c)
        rel = r.relative_rms_at_factor
        return {"cosine": r.cosine[-1], "relative_rms": rel[1.0],
                "relative_rms_0.8": rel[0.8], "relative_rms_1.25": rel[1.25],
                "eta_gap": min(rel[0.8], rel[1.25]) - rel[1.0],
                "eta_model_over_eta_gd": r.eta_model[-1] / r.eta_gd}, r

    sweep = over_seeds(ctx, one)
    margins = [
        sweep.at_least("cosine", 0.99, "cosine of d(y_hat)/d(x_q), model vs one GD step"),
        sweep.at_most("relative_rms", REL_RMS_MAX,
                      "RMS(model - GD(eta*)) / RMS(GD(eta*))"),
        sweep.at_least("eta_gap", 0.0, "min(rel. RMS vs GD(0.8 eta*), vs GD(1.25 eta*)) - "
                       "rel. RMS vs GD(eta*)"),
    ]
    first = sweep.runs[0]
    return Evidence(
        predicted=f"cosine >= 0.99, relative RMS vs GD(eta*) <= {REL_RMS_MAX}, eta* fits "
        "better than 0.8 eta* and 1.25 eta*",
        measured={k: [round(v, 4) for v in vals] for k, vals in sweep.values.items()},
        tolerance="0.99 (the issue's cosine threshold); relative RMS 0.1: a model implementing "
        "GD with a step off by a factor c has relative RMS |c - 1|, so 0.1 pins eta to +-10 %",
        verdict=decide(margins),
        margins=margins,
        per_seed=sweep.to_json(),
        notes=[
            f"config {first.config} (seed {sweep.seeds[0]}); seeds {sweep.seeds}",
            f"run time of the first seed {first.seconds:.1f} s",
            *first.notes,
            "version 2 (issue 14): the cosine of sensitivities does not depend on eta, so the "
            "eta-sensitive relative RMS against GD(f eta*) (f = 0.8, 1, 1.25) was added; "
            "three seeds, decided on the worst; falsifier = planted bug "
            "icl.line-search-eta-per-pair in theory/icl_baselines.py (the line search's eta "
            "n times too small); it was the untrained model. Threshold 0.1 set from seeds 0-4 "
            "at tiny (see the report of issue 14).",
            "issue 12: tiny trains 3 initialisations and keeps the best on a validation batch "
            "(seed 4 stayed at a saddle with one: cosine 0.485); see ICLGDConfig.tiny",
        ],
        figures=[gd_figure(first)],
        details={"eta_gd": [r.eta_gd for r in sweep.runs],
                 "relative_rms_at_factor": [
                     {str(k): v for k, v in r.relative_rms_at_factor.items()}
                     for r in sweep.runs]},
    )


def preconditioner_figure(r: icl_preconditioner.ICLPreconditionerResult) -> Figure:
    learned = [v for row in r.learned for v in row]
    predicted = [v for row in r.gamma_inverse for v in row]
    ends = [min(predicted), max(predicted)]
    return Figure(
        title="Learned preconditioner n A vs Gamma^{-1} (entries, first seed)",
        xlabel="Gamma^{-1} entry",
        ylabel="learned entry",
        series=[
            Series("entries", predicted, learned, "scatter", "o"),
            Series("y = x", ends, ends, "line", "--"),
        ],
    )


@claim(
    "icl.preconditioned-optimum",
    source="Ahn et al. 2023 (arXiv 2306.00297), Thm. 1; " + SOURCE,
    statement="""With x ~ N(0, Sigma), w* ~ N(0, I), the trained one-layer linear attention performs
    one step of GD preconditioned by Gamma^{-1}, Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I
    (within 15 % relative Frobenius error, every seed).""",
    tier=Tier.FULL,
    falsifier="icl.ahn-gamma-is-sigma",
    expected="verified",
    version=3,
    seed_refs=[("000", 967, 967)],
)
def check_preconditioned_optimum(ctx: Context) -> Evidence:
    def one(c: Context) -> tuple[dict[str, float], icl_preconditioner.ICLPreconditionerResult]:
        r = run_experiment(icl_preconditioner, preset(icl_preconditioner.ICLPreconditionerConfig,
                                                      c), c)
        return {"relative_error": r.relative_error,
                "relative_error_vs_sigma_inverse": r.relative_error_vs_sigma_inverse,
                "risk": r.model_risk, "optimal_risk": r.optimal_risk}, r

    sweep = over_seeds(ctx, one)
    margins = [sweep.at_most("relative_error", 0.15, "|n A - Gamma^-1|_F / |Gamma^-1|_F")]
    first = sweep.runs[0]
    return Evidence(
        predicted="n A = Gamma^{-1} (library's theory.icl_construction.ahn_optimal_preconditioner)",
        measured={k: [round(v, 4) for v in vals] for k, vals in sweep.values.items()},
        tolerance="0.15 (the claim's; finite training and SGD noise), on the worst seed",
        verdict=decide(margins),
        margins=margins,
        per_seed=sweep.to_json(),
        notes=[
            f"config {first.config} (seed {sweep.seeds[0]}); seeds {sweep.seeds}",
            f"run time of the first seed {first.seconds:.1f} s",
            f"restart risks of the first seed {[round(v, 4) for v in first.restart_risks]} "
            "(best kept)",  # held-out risk of each restart after screen_steps (see the config)
            "error vs Sigma^-1 (the seed's 'approximates Sigma^{-1}', 000:967) per seed: "
            f"{[round(v, 3) for v in sweep['relative_error_vs_sigma_inverse']]}: reported",
            "version 2 (issue 14): three seeds, worst seed decides; falsifier = planted bug "
            "icl.ahn-gamma-is-sigma in theory/icl_construction.py (it was a swap of the "
            "prediction); threshold 0.15 unchanged",
            "version 3 (issue 19): at default (3 restarts x 3000 steps) seed 1 failed: every "
            "restart stopped at the rank-1 saddle (held-out risks 2.217, 2.180, 2.192 vs the "
            "optimum 1.152; relative error 0.884); the default now screens 12 initialisations "
            "for 200 steps, keeps the lowest held-out risk (no theory) and trains it to 1500 "
            "steps; seeds 0-4: relative error 0.0074, 0.0074, 0.0088, 0.0084, 0.0080, falsifier "
            "0.574-0.577; threshold 0.15 unchanged",
        ],
        figures=[preconditioner_figure(first)],
        details={"learned": first.learned, "gamma_inverse": first.gamma_inverse,
                 "sigma": first.sigma},
    )

@claim(
    "icl.ahn-gamma-moment",
    source="Ahn et al. 2023 (arXiv 2306.00297), Thm. 1 and its proof; " + SOURCE,
    statement="""For x ~ N(0, Sigma), w* ~ N(0, I) and h = (1/n) X^T X w* (the label-weighted
    context sum), E[h h^T] = Gamma Sigma with Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I (Gaussian
    fourth moments), so the optimal one-layer preconditioner E[w* h^T] E[h h^T]^{-1} is
    Gamma^{-1}; checked by Monte Carlo against the library's Gamma to 5 standard errors. The
    seed's optimum Sigma^{-1} (000:967), i.e. Gamma = Sigma and E[h h^T] = Sigma^2, is refuted at
    n = 10: it holds only as n -> infinity.""",
    tier=Tier.QUICK,
    falsifier="icl.ahn-gamma-is-sigma",
    expected="refuted",
    version=2,
    seed_refs=[("000", 967, 967)],
    refutes=[Refutation(
        seed="000", line=967,
        says="the learned preconditioner adapts to Sigma and approximates Sigma^{-1}",
        correct="the one-layer optimum is Gamma^{-1}, Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I "
        "(Ahn et al. 2023, Thm. 1); it equals Sigma^{-1} only as n -> infinity (at n = 10, "
        "d = 3 the Monte Carlo E[h h^T] is many standard errors away from Sigma^2)")],
    statement_zh="""对 x ~ N(0, Sigma)、w* ~ N(0, I) 与 h = (1/n) X^T X w*
    （按标签加权的上下文和），E[h h^T] = Gamma Sigma，其中
    Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I（高斯四阶矩），因此单层最优预条件子
    E[w* h^T] E[h h^T]^{-1} 是 Gamma^{-1}；用蒙特卡洛与库中的 Gamma 比较，误差在 5 个标准误之内。
    种子所说的最优 Sigma^{-1}（000:967，即 Gamma = Sigma、E[h h^T] = Sigma^2）在 n = 10 时被否定：
    它只在 n -> 无穷时成立。""",
)
def check_ahn_gamma_moment(ctx: Context) -> Evidence:
    g = ctx.generator(510)
    d, n, samples = 3, 10, 200_000
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    sigma = q @ torch.diag(torch.tensor([0.25, 1.0, 2.5], dtype=torch.float64)) @ q.T
    chol = torch.linalg.cholesky(sigma)
    x = torch.randn(samples, n, d, generator=g, dtype=torch.float64) @ chol.T
    w = torch.randn(samples, d, generator=g, dtype=torch.float64)
    h = torch.einsum("bnd,bn->bd", x, (x @ w.unsqueeze(-1)).squeeze(-1)) / n  # (1/n) X^T X w
    outer = h.unsqueeze(-1) * h.unsqueeze(-2)  # (B, d, d)
    moment = outer.mean(0)
    stderr = outer.std(0) / math.sqrt(samples)
    predicted = ahn_gamma(sigma, n) @ sigma  # the library's Gamma
    z = float(((moment - predicted).abs() / stderr).max())
    cross = (w.unsqueeze(-1) * h.unsqueeze(-2)).mean(0)  # E[w h^T] = Sigma
    optimum = cross @ torch.linalg.inv(moment)
    gamma_inv = ahn_optimal_preconditioner(sigma, n)
    rel = float(torch.linalg.norm(optimum - gamma_inv) / torch.linalg.norm(gamma_inv))
    margins = [
        # 9 entries, each ~normal by the CLT: P(max |z| > 5) < 9 * 6e-7
        at_most("max over entries of |mean h h^T - Gamma Sigma| / standard error", z, 5.0),
    ]
    # the seed's version (000:967): optimum Sigma^{-1}, i.e. Gamma = Sigma, E[h h^T] = Sigma^2
    z_seed = float(((moment - sigma @ sigma).abs() / stderr).max())
    rel_seed = float(torch.linalg.norm(optimum - torch.linalg.inv(sigma))
                     / torch.linalg.norm(torch.linalg.inv(sigma)))
    seed_margins = [
        at_most("seed (Gamma = Sigma): max over entries of |mean h h^T - Sigma^2| / standard "
                "error", z_seed, 5.0),
    ]
    return Evidence(
        predicted="E[h h^T] = Gamma Sigma (entrywise, within 5 standard errors)",
        measured={"max_z": round(z, 3), "rel_error_optimum_vs_gamma_inverse": round(rel, 4),
                  "seed_max_z_vs_sigma_squared": round(z_seed, 1),
                  "rel_error_optimum_vs_sigma_inverse": round(rel_seed, 4)},
        tolerance="5 Monte Carlo standard errors per entry (200000 draws)",
        verdict=decide(margins, seed_margins),
        margins=margins,
        seed_margins=seed_margins,
        notes=[f"d = {d}, n = {n}, Sigma with eigenvalues 0.25, 1, 2.5 in a random basis",
               f"the Monte Carlo optimum E[w h^T] E[h h^T]^-1 is within {rel:.4f} (relative "
               "Frobenius) of Gamma^-1: reported, not a pass condition (its sampling error is "
               "not derived here)",
               "the quick check of theory.icl_construction.ahn_gamma, the prediction that "
               "icl.preconditioned-optimum compares the trained layer with",
               f"version 2 (issue 18): the seed's Sigma^-1 (000:967) as a seed margin on the same "
               f"moment: max z vs Sigma^2 = {z_seed:.0f}; the Monte Carlo optimum is "
               f"{rel_seed:.3f} (relative Frobenius) from Sigma^-1 and {rel:.4f} from "
               "Gamma^-1"],
        details={"moment": moment.tolist(), "predicted": predicted.tolist(),
                 "stderr": stderr.tolist()},
    )
