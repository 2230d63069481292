"""Trained one-layer linear self-attention: one GD step (von Oswald et al. 2023) and, under
non-isotropic inputs, GD preconditioned by Gamma^{-1} (Ahn et al. 2023, Thm. 1); 000 §8.3.6.

The runs are ``experiments.icl_gd`` and ``experiments.icl_preconditioner``. Each splits into a
memoised ``train`` that never queries the theory (line search, ``gd_predict``, Gamma^{-1}) and a
comparison with the theory computed from it (issue 19). Since issue 31 the falsifiers of the two
trained claims are bugs on the model side (the prompt sampler, the training loop), so a
falsifier run trains again.
"""

from __future__ import annotations

import itertools

import torch

from transformer_math.claims.icl._shared import SOURCE, preset, run_experiment
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
from transformer_math.claims.seeds import over_seeds
from transformer_math.data.regression import sample_regression
from transformer_math.experiments import icl_gd, icl_preconditioner
from transformer_math.i18n.message import msg
from transformer_math.theory.icl_construction import ahn_gamma, ahn_optimal_preconditioner


def gd_figure(r: icl_gd.ICLGDResult) -> Figure:
    steps = [float(s) for s in r.steps]
    return Figure(
        title=msg("Trained linear self-attention vs one GD step (first seed)"),
        xlabel=msg("training step"),
        ylabel=msg("value"),
        series=[
            Series(msg("cosine of d y_hat / d x_q"), steps, r.cosine),
            Series(msg("model loss"), steps, r.model_loss),
            Series(msg("GD loss (line-searched eta)"), steps, [r.gd_loss] * len(steps), "line",
                   "--"),
        ],
        hlines=[(0.99, "0.99")],
    )


# A stated tolerance (eta pinned to +-10 %), NOT derived from a null model: frozen in version 2
# after a sweep of seeds 0-4 at tiny gave 0.053-0.081 (issue 31 says so; see the claim's audit).
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
    falsifier="data.regression-uniform-not-centred",
    expected="verified",
    version=3,
    seed_refs=[("000", 925, 947), ("000", 975, 975)],
    kind="measurement",
    audit="""Issue 31 review (P; b, d2): REL_RMS_MAX = 0.1 was set from a sweep of 0.053-0.081
    and the falsifier icl.line-search-eta-per-pair sat on the GD baseline. Falsifier fixed
    (version 3): data.regression-uniform-not-centred in the prompt sampler the training loop
    draws from (x ~ U(0, 1)^d instead of U(-1, 1)^d: second moment 1/12 I + 1/4 1 1^T, whose
    one-layer optimum is a strongly preconditioned step, not plain GD; tiny seed 0: caught).
    Threshold: disputed only in part and said plainly: 0.1 is a stated tolerance (a model
    implementing GD with a step c eta* has relative RMS |c - 1|, so 0.1 pins eta to +-10 %),
    chosen in version 2 after seeing 0.053-0.081, not derived from a null model; the eta-gap
    margin (eta* fits better than 0.8 eta* and 1.25 eta*) is the tolerance-free part of the
    same statement. icl.line-search-eta-per-pair is killed by
    tests/claims/icl/test_construction_checks.py.""",
    statement_zh="""在上下文线性回归上训练的单层线性自注意力模型与步长经线搜索得到的 eta* 的一步
    梯度下降一致：两者 d(y_hat)/d(x_q) 的余弦 >= 0.99，模型预测与 GD(eta*) 的相对均方根差至多
    10 %，且 GD(eta*) 对模型预测的拟合优于 GD(0.8 eta*) 与 GD(1.25 eta*)（每个种子）。""",
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
            msg("config {config} (seed {seeds_0}); seeds {seeds}", config=first.config,
                seeds_0=sweep.seeds[0], seeds=sweep.seeds),
            msg("run time of the first seed {seconds:.1f} s", seconds=first.seconds),
            *first.notes,
            "version 2 (issue 14): the cosine of sensitivities does not depend on eta, so the "
            "eta-sensitive relative RMS against GD(f eta*) (f = 0.8, 1, 1.25) was added; "
            "three seeds, decided on the worst. Threshold 0.1 set after a sweep of seeds 0-4 "
            "at tiny gave 0.053-0.081 (issue 14): a stated tolerance, not derived from a null "
            "model (issue 31).",
            "version 3 (issue 31): falsifier = planted bug data.regression-uniform-not-centred "
            "in data/regression.py (the training prompts' x ~ U(0, 1)^d); it was "
            "icl.line-search-eta-per-pair on the GD baseline",
            msg("issue 12: tiny trains 3 initialisations and keeps the best on a validation batch "
                "(seed 4 stayed at a saddle with one: cosine 0.485); see ICLGDConfig.tiny"),
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
        title=msg("Learned preconditioner n A vs Gamma^{{-1}} (entries, first seed)"),
        xlabel=msg("Gamma^{{-1}} entry"),
        ylabel=msg("learned entry"),
        series=[
            Series(msg("entries"), predicted, learned, "scatter", "o"),
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
    falsifier="icl.precond-training-isotropic",
    expected="verified",
    version=4,
    seed_refs=[("000", 967, 967)],
    kind="measurement",
    audit="""Issue 31 review (P; d2): the measurement (trained layer vs Gamma^{-1}) is fine but
    the falsifier icl.ahn-gamma-is-sigma swapped the prediction (theory/icl_construction).
    Fixed (version 4): falsifier icl.precond-training-isotropic in the training loop
    (experiments/icl_preconditioner.py: the training batches drawn without Sigma while the
    held-out batches use it, so the layer learns the isotropic optimum n / (n + d + 1) I).
    The 0.15 tolerance is the version-1 value (finite training and SGD noise), stated, not
    derived; measured 0.007-0.009 at default (seeds 0-4), so it decides nothing near its edge.
    000:967's 'approximates Sigma^{-1}' is not refuted here (see icl.ahn-gamma-moment); the
    error vs Sigma^{-1} is reported.""",
    statement_zh="""当 x ~ N(0, Sigma)、w* ~ N(0, I) 时，训练得到的单层线性注意力执行以 Gamma^{-1}
    预条件的一步梯度下降，Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I（相对 Frobenius 误差在 15 %
    以内，每个种子）。""",
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
            msg("config {config} (seed {seeds_0}); seeds {seeds}", config=first.config,
                seeds_0=sweep.seeds[0], seeds=sweep.seeds),
            msg("run time of the first seed {seconds:.1f} s", seconds=first.seconds),
            # held-out risk of each restart after screen_steps (see the config)
            msg("restart risks of the first seed {risks} (best kept)",
                risks=[round(v, 4) for v in first.restart_risks]),
            msg("error vs Sigma^-1 (the seed's 'approximates Sigma^{{-1}}', 000:967) per seed: "
                "{value}: reported",
                value=[round(v, 3) for v in sweep['relative_error_vs_sigma_inverse']]),
            "version 2 (issue 14): three seeds, worst seed decides; threshold 0.15 unchanged",
            msg("version 3 (issue 19): at default (3 restarts x 3000 steps) seed 1 failed: every "
            "restart stopped at the rank-1 saddle (held-out risks 2.217, 2.180, 2.192 vs the "
            "optimum 1.152; relative error 0.884); the default now screens 12 initialisations "
            "for 200 steps, keeps the lowest held-out risk (no theory) and trains it to 1500 "
            "steps; seeds 0-4: relative error 0.0074, 0.0074, 0.0088, 0.0084, 0.0080, falsifier "
            "0.574-0.577; threshold 0.15 unchanged"),
            "version 4 (issue 31): falsifier = planted bug icl.precond-training-isotropic in "
            "experiments/icl_preconditioner.py (the training batches drawn without Sigma); it "
            "was icl.ahn-gamma-is-sigma, a swap of the prediction in theory/",
        ],
        figures=[preconditioner_figure(first)],
        details={"learned": first.learned, "gamma_inverse": first.gamma_inverse,
                 "sigma": first.sigma},
    )

GAMMA_NS = [10, 30, 90]  # context sizes of icl.ahn-gamma-moment: 000:967's limit n -> infinity
GAMMA_SAMPLES, GAMMA_CHUNK = 40_000, 20_000


def label_weighted_moments(sigma: torch.Tensor, n: int, g: torch.Generator
                           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Monte Carlo E[h h^T], its standard error and E[w h^T] for h = (1/n) X^T y on prompts of
    the library's sampler (``data.regression.sample_regression``, x ~ N(0, Sigma), w ~ N(0, I)),
    drawn in chunks (float64)."""
    d = sigma.shape[0]
    total = torch.zeros(d, d, dtype=torch.float64)
    square = torch.zeros(d, d, dtype=torch.float64)
    cross = torch.zeros(d, d, dtype=torch.float64)
    for _ in range(GAMMA_SAMPLES // GAMMA_CHUNK):
        batch = sample_regression(GAMMA_CHUNK, n, d, generator=g, sigma=sigma,
                                  dtype=torch.float64)
        h = torch.einsum("bnd,bn->bd", batch.x, batch.y) / n  # (1/n) X^T X w
        outer = h.unsqueeze(-1) * h.unsqueeze(-2)
        total += outer.sum(0)
        square += (outer * outer).sum(0)
        cross += (batch.w.unsqueeze(-1) * h.unsqueeze(-2)).sum(0)
    mean = total / GAMMA_SAMPLES
    var = (square / GAMMA_SAMPLES - mean * mean) * GAMMA_SAMPLES / (GAMMA_SAMPLES - 1)
    return mean, (var / GAMMA_SAMPLES).sqrt(), cross / GAMMA_SAMPLES


@claim(
    "icl.ahn-gamma-moment",
    source="Ahn et al. 2023 (arXiv 2306.00297), Thm. 1 and its proof; " + SOURCE,
    statement="""For prompts of the library's sampler, x ~ N(0, Sigma), w* ~ N(0, I), and
    h = (1/n) X^T X w* (the label-weighted context sum), E[h h^T] = Gamma Sigma with
    Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I (Monte Carlo within 5 standard errors at
    n = 10, 30, 90), so the optimal one-layer preconditioner E[w* h^T] E[h h^T]^{-1} is
    Gamma^{-1}: it approaches Sigma^{-1} (000:967) as n grows, Gamma Sigma - Sigma^2 being
    (Sigma^2 + tr(Sigma) Sigma) / n.""",
    tier=Tier.QUICK,
    falsifier="data.regression-cholesky-transposed",
    expected="verified",
    version=3,
    seed_refs=[("000", 967, 967)],
    kind="measurement",
    audit="""Issue 31 review (P; c, d2): 000:967 says the preconditioner approximates
    ('逼近') Sigma^{-1}, which is right as n -> infinity, and the equality seed margin (E[h h^T]
    = Sigma^2 within 5 SE at n = 10) was a strawman; the falsifier icl.ahn-gamma-is-sigma
    changed the prediction. Fixed (version 3): the refutation is dropped and the claim is
    verified; the seed's limit is tested as a sweep n = 10, 30, 90 (the moment equals Gamma
    Sigma at every n, and the Monte Carlo optimum's distance to Sigma^{-1} falls along n). The
    moments are now measured on prompts of data.regression.sample_regression (the sampler the
    trained claims use) and the falsifier is data.regression-cholesky-transposed there (x drawn
    with covariance L^T L instead of L L^T = Sigma); icl.ahn-gamma-is-sigma is killed by
    tests/claims/icl/test_construction_checks.py.""",
    statement_zh="""对库中采样器生成的提示（x ~ N(0, Sigma)、w* ~ N(0, I)）与 h = (1/n) X^T X w*
    （按标签加权的上下文和），E[h h^T] = Gamma Sigma，其中
    Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I（n = 10、30、90 时蒙特卡洛误差在 5 个标准误之内），
    因此单层最优预条件子 E[w* h^T] E[h h^T]^{-1} 是 Gamma^{-1}：随 n 增大它逼近 Sigma^{-1}
    （000:967），因为 Gamma Sigma - Sigma^2 = (Sigma^2 + tr(Sigma) Sigma) / n。""",
)
def check_ahn_gamma_moment(ctx: Context) -> Evidence:
    g = ctx.generator(510)
    d = 3
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    sigma = q @ torch.diag(torch.tensor([0.25, 1.0, 2.5], dtype=torch.float64)) @ q.T
    sigma_inv = torch.linalg.inv(sigma)
    rows = []
    for n in GAMMA_NS:
        moment, stderr, cross = label_weighted_moments(sigma, n, g)
        predicted = ahn_gamma(sigma, n) @ sigma  # the library's Gamma, Ahn et al.'s closed form
        optimum = cross @ torch.linalg.inv(moment)
        gamma_inv = ahn_optimal_preconditioner(sigma, n)
        rows.append({
            "n": n,
            "z": float(((moment - predicted).abs() / stderr).max()),
            "to_gamma_inverse": float(torch.linalg.norm(optimum - gamma_inv)
                                      / torch.linalg.norm(gamma_inv)),
            "to_sigma_inverse": float(torch.linalg.norm(optimum - sigma_inv)
                                      / torch.linalg.norm(sigma_inv)),
            "gamma_inverse_to_sigma_inverse": float(torch.linalg.norm(gamma_inv - sigma_inv)
                                                    / torch.linalg.norm(sigma_inv)),
        })
        ctx.report_progress(len(rows) / len(GAMMA_NS))
    falls = min(a["to_sigma_inverse"] - b["to_sigma_inverse"]
                for a, b in itertools.pairwise(rows))
    margins = [
        # 9 entries x 3 n, each ~normal by the CLT: P(max |z| > 5) < 27 * 6e-7
        at_most("max over n and entries of |mean h h^T - Gamma Sigma| / standard error",
                max(r["z"] for r in rows), 5.0),
        at_least("min over consecutive n of the fall of |optimum - Sigma^-1| / |Sigma^-1| "
                 "(the optimum approaches Sigma^-1 as n grows)", falls, 0.0),
    ]
    return Evidence(
        predicted={"moment": "E[h h^T] = Gamma Sigma (entrywise, within 5 standard errors)",
                   "|Gamma^-1 - Sigma^-1| / |Sigma^-1|": {
                       str(r["n"]): round(r["gamma_inverse_to_sigma_inverse"], 4)
                       for r in rows}},
        measured={str(r["n"]): {"max_z": round(r["z"], 3),
                                "optimum_to_gamma_inverse": round(r["to_gamma_inverse"], 4),
                                "optimum_to_sigma_inverse": round(r["to_sigma_inverse"], 4)}
                  for r in rows},
        tolerance=f"5 Monte Carlo standard errors per entry ({GAMMA_SAMPLES} prompts per n); "
        "the fall along n must be positive (predicted falls 0.26 and 0.19; the Monte "
        "Carlo optimum is within ~0.01 of Gamma^-1)",
        verdict=decide(margins),
        margins=margins,
        notes=[f"d = {d}, n = {GAMMA_NS}, Sigma with eigenvalues 0.25, 1, 2.5 in a random basis; "
               "prompts from data.regression.sample_regression (float64)",
               "the Monte Carlo optimum E[w h^T] E[h h^T]^-1 vs Gamma^-1 (relative Frobenius) "
               "is reported, not a pass condition (its sampling error is not derived here)",
               "000:967 ('逼近 Sigma^{-1}') is the n -> infinity limit of Gamma^{-1}: "
               "|Gamma^-1 - Sigma^-1| / |Sigma^-1| = "
               + ", ".join(f"{r['gamma_inverse_to_sigma_inverse']:.3f} (n = {r['n']})"
                           for r in rows),
               "version 3 (issue 31): the equality refutation of 000:967 is dropped (the seed "
               "says 'approximates'); falsifier data.regression-cholesky-transposed in the "
               "sampler (was icl.ahn-gamma-is-sigma, a swap of the prediction)"],
        details={"rows": rows, "sigma": sigma.tolist()},
    )
