"""Claims of 000 §8.3.6: in-context learning as gradient descent, Bayes, diversity, induction.

Each check measures with the project's own implementation (linear self-attention model loaded
with the explicit construction, trained models, baselines, scores) and compares with a
prediction computed another way (GD from residuals, Neumann sums, closed forms, thresholds).
Full-tier experiments are memoised per configuration so that a claim and its falsifier (the same
check on a wrong variant) train only once.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Figure,
    Series,
    Tier,
    agreement,
    all_hold,
    at_least,
    at_most,
    claim,
)
from transformer_math.data.regression import make_task_pool, sample_regression
from transformer_math.experiments import icl_gd, icl_preconditioner, induction_heads, task_diversity
from transformer_math.nn.init import no_init_draws
from transformer_math.nn.linear_self_attention import LinearSelfAttention, regression_tokens
from transformer_math.theory.icl_baselines import dmmse_posterior, ridge_predict
from transformer_math.theory.icl_construction import (
    gd_iterates,
    least_squares_terms,
    neumann_error_bound,
    neumann_partial_sums,
    newton_schulz_inverse,
    one_step_gd_weights,
)

SOURCE = "000 §8.3.6"


def _preset(cls: Any, ctx: Context) -> Any:
    return ctx.preset(cls)(ctx.seed)


_results: dict[Any, Any] = {}  # memo: (run function, frozen config) -> result


def _get(module: Any, config: Any, ctx: Context) -> Any:
    """``module.run(config)``, computed once per configuration (claim and falsifier share it)."""
    key = (module.run, config)
    if key not in _results:
        _results[key] = module.run(config, ctx.report_progress if ctx.progress else None)
    return _results[key]


def _constructed_model(
    dim: int, eta: float, n: int, layers: int, sign: float
) -> LinearSelfAttention:
    with no_init_draws():  # every weight is set by the construction below
        model = LinearSelfAttention(dim + 1, layers, dtype=torch.float64)
    for layer in model.layers:
        layer.load_weights(*one_step_gd_weights(dim, eta, n, value_label_sign=sign).as_tuple())
    return model


# --------------------------------------------------------------------------------- one-step GD
@claim(
    "icl.one-step-gd",
    source=f"{SOURCE} (M3, exercise 8.3.6-1); von Oswald et al. 2023, Prop. 1",
    statement="""One linear self-attention layer with W_K = W_Q = [[I,0],[0,0]],
    W_V = [[0,0],[0,-1]]
    and P = (eta/N) e e^T outputs -h[-1,-1] = eta/N x_q^T X^T y, the prediction of one GD step from
    w_0 = 0 on L(w) = 1/(2N) sum (w^T x_i - y_i)^2 (float64 error < 1e-10).""",
    tier=Tier.QUICK,
    falsifier=Falsifier(
        "drop the -1 in W_V",
        {"value_label_sign": 1.0},
        "W_V = [[0,0],[0,+1]]: the layer stores +x_q^T w_1 and the read-out flips",
    ),
)
def check_one_step_gd(ctx: Context, value_label_sign: float = -1.0) -> Evidence:
    g = ctx.generator(501)
    errors = []
    cases = []
    for _ in range(6):
        dim = int(torch.randint(1, 13, (1,), generator=g))
        n = int(torch.randint(1, 41, (1,), generator=g))
        eta = float(torch.rand(1, generator=g, dtype=torch.float64)) * 2
        x = torch.randn(32, n, dim, generator=g, dtype=torch.float64)
        y = torch.randn(32, n, generator=g, dtype=torch.float64)
        xq = torch.randn(32, dim, generator=g, dtype=torch.float64)
        model = _constructed_model(dim, eta, n, 1, value_label_sign)
        with torch.no_grad():
            measured = model.predict(regression_tokens(x, y, xq))
        w1 = gd_iterates(x, y, eta, 1)[1]  # from the residuals, not from the construction
        errors.append(float((measured - (xq * w1).sum(-1)).abs().max()))
        cases.append({"d": dim, "N": n, "eta": round(eta, 4)})
    worst = max(errors)
    margins = [at_most("max |y_hat_LSA - x_q^T w_1| over 6 (d, N, eta)", worst, 1e-10)]
    return Evidence(
        predicted="|y_hat_LSA - x_q^T w_1| = 0 (one GD step)",
        measured=f"max error {worst:.2e} over {len(cases)} random (d, N, eta), 32 prompts each",
        tolerance="< 1e-10 (float64 round-off of sums of <= 40 products is ~1e-14)",
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=["read-out is -h[-1,-1]: the construction stores the NEGATIVE prediction (FACTS.md)"],
        details={"cases": cases, "errors": errors, "value_label_sign": value_label_sign},
    )


# --------------------------------------------------------------------------- Neumann / OLS
@claim(
    "icl.neumann-ols",
    source=f"{SOURCE} (多层 = 多步, exercise 8.3.6-4, worked example 0, 1, 1.5, 1.75, 1.875)",
    statement="""L stacked construction layers perform L GD steps:
    w_L = eta sum_{j<L} (I - eta H)^j b,
    which converges to the OLS solution with error <= |I - eta H|^L |w*| when
    0 < eta < 2/lambda_max(H); the scalar example H = 1, b = 2, eta = 0.5 gives
    0, 1, 1.5, 1.75, 1.875.""",
    tier=Tier.QUICK,
    falsifier=Falsifier(
        "step beyond 2/lambda_max",
        {"eta_factor": 2.2},
        "eta = 2.2 / lambda_max(H): the Neumann series diverges",
    ),
)
def check_neumann_ols(ctx: Context, eta_factor: float = 1.0) -> Evidence:
    # (a) the seed's worked example, measured with 0..4 stacked constructed layers
    example_pred = [0.0, 1.0, 1.5, 1.75, 1.875]
    x1 = torch.ones(1, 1, 1, dtype=torch.float64)  # N = 1, x = 1: H = 1
    y1 = torch.full((1, 1), 2.0, dtype=torch.float64)  # b = 2
    xq1 = torch.ones(1, 1, dtype=torch.float64)
    example_meas = [0.0]
    for layers in range(1, 5):
        with torch.no_grad():
            model = _constructed_model(1, 0.5, 1, layers, -1.0)
            example_meas.append(float(model.predict(regression_tokens(x1, y1, xq1))[0]))
    example_err = max(abs(a - b) for a, b in zip(example_meas, example_pred, strict=True))
    # (b) a random problem: w_L read from the L-layer model with basis queries. A second target
    # vector y = X v, v the eigenvector of H with the largest |1 - eta lambda|, makes w* = v the
    # direction in which the bound is attained: the ratio error / bound is then 1 for every L
    # (up to rounding), so the bound is checked where it is tight, not only where it is loose.
    g = ctx.generator(502)
    d, n, max_layers = 4, 96, 40
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.randn(n, generator=g, dtype=torch.float64)
    hess, b = least_squares_terms(x, y)
    lam, vecs = torch.linalg.eigh(hess)
    lam_max = float(lam.max())
    eta = eta_factor / lam_max
    # OLS from the same eigendecomposition, w* = V diag(1/lambda) V^T b: MKL's least-squares
    # driver (torch.linalg.lstsq) changes its last bits with the alignment of its buffers, so
    # its answer depended on what ran before (the order test of issue 12); eigh does not.
    w_star = vecs @ ((vecs.T @ b) / lam)
    w_tight = vecs[:, int((1 - eta * lam).abs().argmax())]
    y_tight = x @ w_tight
    xb = x.expand(2 * d, n, d)
    yb = torch.cat([y.expand(d, n), y_tight.expand(d, n)])
    basis = torch.eye(d, dtype=torch.float64)
    queries = torch.cat([basis, basis])
    layer_grid = [1, 2, 4, 8, 16, 24, 32, 40]
    measured_err, bound, ratios, neumann_gap = [], [], [], 0.0
    sums = neumann_partial_sums(hess, b, eta, max_layers)
    bounds = neumann_error_bound(hess, w_star, eta, max_layers)
    bounds_tight = neumann_error_bound(hess, w_tight, eta, max_layers)
    for layers in layer_grid:
        with torch.no_grad():
            w_both = _constructed_model(d, eta, n, layers, -1.0).predict(
                regression_tokens(xb, yb, queries)
            )
        w_l, w_l_tight = w_both[:d], w_both[d:]
        measured_err.append(float(torch.linalg.vector_norm(w_l - w_star)))
        bound.append(float(bounds[layers]))
        err_tight = float(torch.linalg.vector_norm(w_l_tight - w_tight))
        # (|w_L - w*| - 1e-12) / bound: 1e-12 absorbs the rounding of w_L - w* once both are tiny
        for m, bd in ((measured_err[-1], bound[-1]), (err_tight, float(bounds_tight[layers]))):
            ratios.append((m - 1e-12) / bd if bd > 0 else math.inf)
        neumann_gap = max(neumann_gap, float((w_l - sums[layers]).abs().max()))
    bound_ratio = max(ratios)
    final_rel = measured_err[-1] / float(torch.linalg.vector_norm(w_star))
    margins = [
        at_most("worked example: max |measured - 0, 1, 1.5, 1.75, 1.875|", example_err, 1e-12),
        at_most("max_L (|w_L - w*| - 1e-12) / (|I - eta H|^L |w*|), random and tight w*",
                bound_ratio, 1 + 1e-9),
        at_most("|w_40 - w*| / |w*|", final_rel, 1e-3),
        at_most("max |model w_L - Neumann partial sum|", neumann_gap, 1e-8),
    ]
    ok = all_hold(margins)
    fig = Figure(
        title="L stacked GD layers: distance to OLS",
        xlabel="layers L",
        ylabel="|w_L - w_OLS|",
        logy=True,
        series=[
            Series(
                "measured (constructed LSA)",
                [float(v) for v in layer_grid],
                measured_err,
                "line",
                "o-",
            ),
            Series("bound |I - eta H|^L |w*|", [float(v) for v in layer_grid], bound, "line", "--"),
        ],
    )
    return Evidence(
        predicted={"worked_example": example_pred, "error": "<= |I-eta H|^L |w*| -> 0"},
        measured={
            "worked_example": example_meas,
            "error_at_L": dict(zip(map(str, layer_grid), measured_err, strict=True)),
        },
        tolerance="worked example to 1e-12; bound with 1e-9 relative slack; "
        "|w_40 - w*| < 1e-3 |w*|; "
        "model vs Neumann sums < 1e-8",
        verdict=agreement(ok),
        margins=margins,
        notes=[
            f"eta = {eta_factor} / lambda_max(H) = {eta:.4f}; 2/lambda_max = {2 / lam_max:.4f}",
            f"max |model w_L - Neumann partial sum| = {neumann_gap:.2e}",
            "issue 12 (margins over seeds 0-4 at tiny): N = 24 -> 96 context pairs, so that "
            "kappa(H) ~ 2.3 instead of ~6 and 40 layers converge for every seed (seed 4 had "
            "|w_40 - w*| / |w*| = 1.5e-3 > 1e-3 at N = 24); the bound is also checked at the w* "
            "that attains it (ratio 1), since on a random w* its tightness varies with the seed.",
        ],
        figures=[fig],
        details={"kappa": float(lam_max / lam.min()), "bound_ratios": ratios},
    )


# ------------------------------------------------------------------------- trained vs GD
@claim(
    "icl.trained-matches-gd",
    source=f"{SOURCE}; von Oswald et al. 2023, §4 (d = 10, N = 10, x ~ U(-1, 1)^d)",
    statement="""A one-layer linear self-attention model trained on in-context linear regression
    agrees with one step of line-searched GD: the cosine of d(y_hat)/d(x_q) between the two is
    >= 0.99.""",
    tier=Tier.FULL,
    falsifier=Falsifier(
        "untrained model",
        {"checkpoint": "init"},
        "the same comparison at initialisation must not pass",
    ),
)
def check_trained_matches_gd(ctx: Context, checkpoint: str = "final") -> Evidence:
    config = _preset(icl_gd.ICLGDConfig, ctx)
    r = _get(icl_gd, config, ctx)
    index = -1 if checkpoint == "final" else 0
    cosine = r.cosine[index]
    margins = [at_least("cosine of d(y_hat)/d(x_q), model vs one GD step", cosine, 0.99)]
    fig = Figure(
        title="Trained linear self-attention vs one GD step",
        xlabel="training step",
        ylabel="value",
        series=[
            Series("cosine of d y_hat / d x_q", [float(s) for s in r.steps], r.cosine),
            Series("model loss", [float(s) for s in r.steps], r.model_loss),
            Series(
                "GD loss (line-searched eta)",
                [float(s) for s in r.steps],
                [r.gd_loss] * len(r.steps),
                "line",
                "--",
            ),
        ],
        hlines=[(0.99, "0.99")],
    )
    return Evidence(
        predicted="cosine >= 0.99 (the trained layer implements one GD step)",
        measured=round(cosine, 5),
        tolerance="0.99 (the issue's threshold; von Oswald et al. report ~0.99+)",
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            f"config {config}",
            f"run time {r.seconds:.1f} s",
            f"eta (line search) {r.eta_gd:.4f} vs learned eta {r.eta_model[index]:.4f}",
            f"loss model {r.model_loss[index]:.4f} vs GD {r.gd_loss:.4f}",
            *r.notes,
            "issue 12: tiny trains 3 initialisations and keeps the best on a validation batch "
            "(seed 4 stayed at a saddle with one: cosine 0.485); see ICLGDConfig.tiny",
        ],
        figures=[fig],
        details={
            "sensitivity_l2": r.sensitivity_l2[index],
            "prediction_rms": r.prediction_rms[index],
            "checkpoint": checkpoint,
        },
    )


# ------------------------------------------------------------------------- preconditioner
@claim(
    "icl.preconditioned-optimum",
    source="Ahn et al. 2023 (arXiv 2306.00297), Thm. 1; " + SOURCE,
    statement="""With x ~ N(0, Sigma), w* ~ N(0, I), the trained one-layer linear attention performs
    one step of GD preconditioned by Gamma^{-1}, Gamma = ((n+1)/n) Sigma + (tr Sigma / n) I
    (within 15 % relative Frobenius error).""",
    tier=Tier.FULL,
    falsifier=Falsifier(
        "naive whitening Sigma^{-1}",
        {"prediction": "sigma_inverse"},
        "the seed's reading 'the preconditioner approximates Sigma^{-1}'",
    ),
)
def check_preconditioned_optimum(ctx: Context, prediction: str = "gamma_inverse") -> Evidence:
    config = _preset(icl_preconditioner.ICLPreconditionerConfig, ctx)
    r = _get(icl_preconditioner, config, ctx)
    rel = r.relative_error if prediction == "gamma_inverse" else r.relative_error_vs_sigma_inverse
    margins = [at_most("|n A - prediction|_F / |prediction|_F", rel, 0.15)]
    learned = [v for row in r.learned for v in row]
    predicted = [v for row in r.gamma_inverse for v in row]
    fig = Figure(
        title="Learned preconditioner n A vs Gamma^{-1} (entries)",
        xlabel="Gamma^{-1} entry",
        ylabel="learned entry",
        series=[
            Series("entries", predicted, learned, "scatter", "o"),
            Series(
                "y = x",
                [min(predicted), max(predicted)],
                [min(predicted), max(predicted)],
                "line",
                "--",
            ),
        ],
    )
    return Evidence(
        predicted=f"n A = {prediction.replace('_', ' ')}",
        measured=f"relative Frobenius error {rel:.4f}",
        tolerance="0.15 (the claim's; finite training and SGD noise)",
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            f"config {config}",
            f"run time {r.seconds:.1f} s",
            f"risk trained {r.model_risk:.4f} vs optimum tr(S) - tr(S G^-1 S) = "
            f"{r.optimal_risk:.4f}",
            f"restart risks {[round(v, 4) for v in r.restart_risks]} (best kept)",
            f"error vs Sigma^-1 would be {r.relative_error_vs_sigma_inverse:.3f}",
        ],
        figures=[fig],
        details={"learned": r.learned, "gamma_inverse": r.gamma_inverse, "sigma": r.sigma},
    )


# ------------------------------------------------------------------------- Bayes
@claim(
    "icl.bayes-posterior",
    source=f"{SOURCE} (隐式贝叶斯推断); Xie et al. 2022; Raventos et al. 2023",
    statement="""With a discrete prior over M tasks the posterior concentrates on the true task as
    examples grow; under the Gaussian prior w ~ N(0, tau^2 I), ridge with lambda = sigma^2/tau^2 has
    the lowest risk, equal to the Bayes risk sigma^2 + E tr((X^T X / sigma^2 + I / tau^2)^{-1}).""",
    tier=Tier.QUICK,
    falsifier=Falsifier(
        "inverted ridge ratio",
        {"lambda_rule": "inverted"},
        "lambda = tau^2 / sigma^2 instead of sigma^2 / tau^2",
    ),
)
def check_bayes_posterior(ctx: Context, lambda_rule: str = "sigma2_over_tau2") -> Evidence:
    g = ctx.generator(505)
    dim, k, noise_var, tau2, m = 4, 64, 0.25, 1.0, 32
    # (a) posterior concentration (dMMSE posterior over a pool; true task drawn from the pool)
    pool = make_task_pool(m, dim, generator=g, dtype=torch.float64)
    index = torch.randint(m, (2000,), generator=g)
    x = torch.randn(2000, k, dim, generator=g, dtype=torch.float64)
    y = (x @ pool[index].unsqueeze(-1)).squeeze(-1) + noise_var**0.5 * torch.randn(
        2000, k, generator=g, dtype=torch.float64
    )
    k_grid = [*range(17), 20, 24, 28, 32, 40, 48, 56, 64]  # every K up to 16, then coarser
    mass = [
        float(
            dmmse_posterior(x[:, :i], y[:, :i], pool, noise_var)
            .gather(1, index.unsqueeze(1))
            .mean()
        )
        for i in k_grid
    ]
    min_step = min(b - a for a, b in itertools.pairwise(mass))
    # (b) ridge risk over lambda under the Gaussian prior. ridge_predict is linear in the context
    # labels, y_hat = c^T y; its coefficients c (read off with unit label vectors) give the risk
    # given (X, x_q) exactly: E[(c^T y - y_q)^2 | X, x_q] = tau^2 |X^T c - x_q|^2 + sigma^2 |c|^2
    # + sigma^2, averaged over 10000 draws of (X, x_q); the Bayes risk given (X, x_q) is
    # sigma^2 + x_q^T C x_q with C = (X^T X / sigma^2 + I / tau^2)^{-1} (posterior covariance).
    batch = sample_regression(10000, 7, dim, generator=g, noise_var=noise_var, dtype=torch.float64)
    xc, yc, xq, yq = batch.split_query()
    claimed = noise_var / tau2 if lambda_rule == "sigma2_over_tau2" else tau2 / noise_var
    grid = [noise_var / tau2 * f for f in (1 / 16, 1 / 4, 1, 4, 16)]
    if claimed not in grid:
        grid.append(claimed)
    grid.sort()
    units = torch.eye(xc.shape[1], dtype=torch.float64)

    def exact_risk(lam: float) -> torch.Tensor:  # (B,) risk of ridge_predict given (X, x_q)
        coef = torch.stack(
            [ridge_predict(xc, units[j].expand_as(yc), xq, lam) for j in range(xc.shape[1])], -1
        )  # (B, K)
        bias = torch.einsum("bkd,bk->bd", xc, coef) - xq
        return tau2 * (bias**2).sum(-1) + noise_var * (coef**2).sum(-1) + noise_var

    risks = [float(exact_risk(lam).mean()) for lam in grid]
    best = grid[min(range(len(grid)), key=risks.__getitem__)]
    risk_claimed = risks[grid.index(claimed)]
    eye = torch.eye(dim, dtype=torch.float64)
    post_cov = torch.linalg.inv(xc.transpose(1, 2) @ xc / noise_var + eye / tau2)
    bayes = noise_var + float(torch.einsum("bd,bde,be->b", xq, post_cov, xq).mean())
    # Monte Carlo over (w, noise) as well, reported beside the exact value
    err = (ridge_predict(xc, yc, xq, claimed) - yq) ** 2
    risk_mc, stderr = float(err.mean()), float(err.std() / math.sqrt(err.numel()))
    others = [r for lam, r in zip(grid, risks, strict=True) if lam != claimed]
    margins = [
        at_most("|posterior mass at K = 0 - 1/M|", abs(mass[0] - 1.0 / m), 1e-12),
        at_least(f"posterior mass on the true task at K = {k}", mass[-1], 0.99),
        at_least("min_K (mass(K+1) - mass(K))", min_step, -0.01),
        at_least("min risk at the other lambdas - risk at the claimed lambda",
                 min(others) - risk_claimed, 0.0),
        at_most("|risk(claimed lambda) - Bayes risk| / Bayes risk (exact given X, x_q)",
                abs(risk_claimed - bayes) / bayes, 1e-9),
    ]
    ok = all_hold(margins)
    fig = Figure(
        title="Ridge risk vs lambda under the Gaussian prior",
        xlabel="lambda",
        ylabel="risk",
        logx=True,
        series=[Series("ridge risk (measured)", grid, risks, "line", "o-")],
        hlines=[(bayes, "Bayes risk")],
        vlines=[(noise_var / tau2, "sigma^2 / tau^2")],
    )
    return Evidence(
        predicted={
            "argmin_lambda": claimed,
            "bayes_risk": round(bayes, 4),
            "posterior_mass_at_K": ">= 0.99 (from 1/M)",
        },
        measured={
            "argmin_lambda": best,
            "risk_at_claimed": round(risk_claimed, 4),
            "posterior_mass": [round(v, 4) for v in mass],
        },
        tolerance="risk equal to the Bayes risk to 1e-9 relative (float64 rounding; exact given "
        f"X, x_q); posterior mass >= 0.99 at K = {k} and non-decreasing up to 0.01 (Monte Carlo)",
        verdict=agreement(ok),
        margins=margins,
        notes=[
            f"D = {dim}, sigma^2 = {noise_var}, tau^2 = {tau2}, M = {m}; ridge on 6 context pairs, "
            f"10000 prompts; lambda rule {lambda_rule}",
            f"Monte Carlo over (w, noise) too: risk {risk_mc:.4f} +- {stderr:.4f} vs Bayes "
            f"{bayes:.4f} ({abs(risk_mc - bayes) / stderr:.2f} standard errors)",
            "issue 12 (margins over seeds 0-4 at tiny): the risk is now computed exactly given "
            "(X, x_q) from ridge_predict's linear coefficients, not only by Monte Carlo: a test "
            "'within 4 standard errors' has a slack of (4 - |z|) standard errors whose spread is "
            "itself ~0.6 standard errors, never 3x firm (seeds 0-4: ratio 2.3). K = 32 -> 64 "
            "context pairs for the posterior mass (at K = 32 its slack over 0.99 was 1.1x the "
            "spread between pools; the mass converges exponentially in K).",
        ],
        figures=[
            fig,
            Figure(
                title=f"dMMSE posterior mass on the true task (M = {m})",
                xlabel="context examples K",
                ylabel="mean posterior mass",
                series=[Series("measured", [float(i) for i in k_grid], mass, "line", "o-")],
                hlines=[(1.0 / m, "prior 1/M"), (0.99, "0.99")],
            ),
        ],
        details={"lambda_grid": grid, "risks": risks, "risk_monte_carlo": risk_mc,
                 "stderr": stderr},
    )


# ------------------------------------------------------------------------- task diversity
@claim(
    "icl.task-diversity-transition",
    source=f"{SOURCE} (第三个视角: 相变); Raventos et al. 2023",
    statement="""Sweeping the number M of pretraining tasks, a small transformer's predictions on
    fresh
    tasks are closest to dMMSE (posterior over the M pool tasks) for small M and closest to ridge
    (the Gaussian-prior Bayes estimator) for large M; the crossover estimates M*.""",
    tier=Tier.FULL,
    falsifier=Falsifier(
        "untrained models",
        {"models": "untrained"},
        "the same sweep evaluated at initialisation must not pass",
    ),
)
def check_task_diversity(ctx: Context, models: str = "trained") -> Evidence:
    config = _preset(task_diversity.TaskDiversityConfig, ctx)
    r = _get(task_diversity, config, ctx)
    if models == "trained":
        dd, dr, mse = r.distance_to_dmmse, r.distance_to_ridge, r.model_mse
    else:
        dd, dr, mse = r.untrained_distance_to_dmmse, r.untrained_distance_to_ridge, r.untrained_mse
    zero_mse = config.x_dim + config.noise_var  # predicting 0: E y^2 = D tau^2 + sigma^2
    # A model "follows ridge" only where it has learned in-context regression at all: its
    # fresh-task MSE must recover at least half of the gain from the zero predictor to ridge.
    # Runs still on the predict-zero plateau follow neither baseline and are reported, not used.
    learned_line = r.ridge_mse + 0.5 * (zero_mse - r.ridge_mse)
    ridge_regime = [
        m
        for m, a, b, e in zip(r.num_tasks, dd, dr, mse, strict=True)
        if b < a and e <= learned_line and m > r.num_tasks[0]
    ]
    above_line = [m for m, e in zip(r.num_tasks, mse, strict=True) if e > learned_line]
    # The orderings as scale-free contrasts (a - b) / (a + b) in [-1, 1] (same signs as a - b):
    # the distances scale with |w|^2 of the pool tasks, which differs between seeds.
    def contrast(a: float, b: float) -> float:
        return (a - b) / (a + b) if a + b > 0 else 0.0

    # "closer to ridge and learned" at the best M above the smallest: both conditions >= 0; the
    # learning condition as the fraction of the zero-to-ridge gain left unrecovered, <= 1/2
    ridge_side = max(
        (min(contrast(a, b), 0.5 - (e - r.ridge_mse) / (zero_mse - r.ridge_mse))
         for m, a, b, e in zip(r.num_tasks, dd, dr, mse, strict=True) if m > r.num_tasks[0]),
        default=-math.inf,
    )
    margins = [
        at_least("(d_ridge - d_dmmse) / (d_ridge + d_dmmse) at the smallest M",
                 contrast(dr[0], dd[0]), 0.0),
        at_least("max over larger M of min((d_dmmse - d_ridge) / (d_dmmse + d_ridge), "
                 "1/2 - unrecovered gain)", ridge_side, 0.0),
    ]
    ok = all_hold(margins)
    log2_m_star = task_diversity.crossover_log2(
        [math.log2(m) for m in r.num_tasks], [a - b for a, b in zip(dd, dr, strict=True)]
    )
    xs = [float(m) for m in r.num_tasks]
    fig = Figure(
        title="Task diversity: distance of the model to dMMSE and to ridge (fresh tasks)",
        xlabel="number of pretraining tasks M",
        ylabel="mean squared distance",
        logx=True,
        series=[Series("to dMMSE", xs, dd, "line", "o-"), Series("to ridge", xs, dr, "line", "s-")],
        vlines=[(2**log2_m_star, "M*")] if log2_m_star is not None else [],
    )
    m_star = None if log2_m_star is None else round(log2_m_star, 2)
    return Evidence(
        predicted="closer to dMMSE at the smallest M; closer to ridge at some larger M where "
        "the model has learned (MSE <= ridge + half the gap to the zero predictor)",
        measured={
            "log2_M_star": m_star,
            "d_dmmse": [round(v, 3) for v in dd],
            "d_ridge": [round(v, 3) for v in dr],
            "mse": [round(v, 3) for v in mse],
        },
        tolerance="orderings of distances (no numeric slack); learning criterion: half of the "
        "possible in-context gain from the zero predictor to ridge",
        verdict=agreement(ok),
        margins=margins,
        notes=[
            f"scaled down per FACTS.md: {config}",
            f"run time {r.seconds:.1f} s",
            f"ridge MSE {r.ridge_mse:.3f}, zero-predictor MSE {zero_mse:.3f}",
            "Raventos et al.'s M* = 2^11..2^14 needs ~500k steps; short training moves M* down",
            "issue 12: the orderings are reported as contrasts (a - b) / (a + b) (same signs; "
            "the distances scale with the pool's |w|^2). NOT firm at tiny: at D = 1, M = 128 the "
            "dMMSE and ridge predictions differ by only 0.001-0.005 in mean square, so which one "
            "the model is closer to is decided by noise (seeds 1-4 fail the large-M ordering); "
            "tried: D = 1 with M = 8..32 stays closer to dMMSE after 1000 steps, D = 2 (M = 32) "
            "does not learn in 1000 steps at d_model 16. Needs a longer tiny run (open).",
            f"ridge regime (closer to ridge and learned) at M = {ridge_regime}",
            f"fresh-task MSE above ridge + half the gap ({learned_line:.3f}) at M = {above_line}: "
            "expected below M* (the model predicts with memorised pool tasks); above M* it means "
            "that run stayed on the predict-zero plateau and follows neither baseline",
        ],
        figures=[fig],
        details={
            "num_tasks": r.num_tasks,
            "dmmse_mse": r.dmmse_mse,
            "models": models,
            "ridge_regime": ridge_regime,
            "above_learned_line": above_line,
        },
    )


# ------------------------------------------------------------------------- induction heads
@claim(
    "icl.induction-heads",
    source=f"{SOURCE} (第四个视角: 归纳头); Olsson et al. 2022",
    statement="""A 2-layer attention-only transformer trained on repeated random segments forms a
    previous-token head in layer 0 and an induction head in layer 1; the induction score rises
    sharply when the in-context loss drops; a 1-layer model does not form one.""",
    tier=Tier.FULL,
    falsifier=Falsifier(
        "one layer",
        {"model": "control"},
        "the 1-layer control checked as if it were the 2-layer model",
    ),
)
def check_induction_heads(ctx: Context, model: str = "two_layer") -> Evidence:
    config = _preset(induction_heads.InductionHeadsConfig, ctx)
    r = _get(induction_heads, config, ctx)
    c = r.two_layer if model == "two_layer" else r.control
    last = c.num_layers - 1
    induction = c.max_induction(last)
    prev0 = c.max_previous_token(0)
    control_max = max(r.control.max_induction())
    cross = c.first_crossing(induction, 0.5)
    drop = c.steepest_loss_drop()
    window = max(2 * config.eval_every, int(0.05 * config.steps))
    margins = [
        at_least("layers of the model checked", c.num_layers, 2),
        at_least("final induction score (best head, last layer)", induction[-1], 0.5),
        at_least("final previous-token score (best head, layer 0)", prev0[-1], 0.4),
        at_most("|steepest in-context-loss drop - induction crossing 0.5| (steps)",
                math.inf if cross is None else abs(drop - cross), window),
        at_most("max induction score of the 1-layer control", control_max, 0.2),
    ]
    ok = all_hold(margins)
    xs = [float(s) for s in c.steps]
    fig = Figure(
        title="Induction-head phase change",
        xlabel="training step",
        ylabel="score / loss",
        series=[
            Series(f"induction score (best head, layer {last})", xs, induction),
            Series("previous-token score (best head, layer 0)", xs, prev0),
            Series(
                "in-context loss / ln(vocab)",
                xs,
                [v / math.log(config.vocab_size) for v in c.in_context_loss],
            ),
            Series(
                "1-layer control induction score",
                [float(s) for s in r.control.steps],
                r.control.max_induction(),
                "line",
                "--",
            ),
        ],
        vlines=[(float(cross), "induction 0.5")] if cross is not None else [],
    )
    return Evidence(
        predicted="induction >= 0.5 (layer 1), previous-token >= 0.4 (layer 0), loss drop at the "
        "crossing, 1-layer control < 0.2",
        measured={
            "induction_final": round(induction[-1], 3),
            "prev_token_final": round(prev0[-1], 3),
            "crossing_step": cross,
            "steepest_drop_step": drop,
            "control_max_induction": round(control_max, 3),
            "icl_score_final": round(c.icl_score[-1], 3),
        },
        tolerance=f"thresholds: 0.5 = majority of a head's attention on the induction target "
        f"(uniform attention gives ~1/t < 0.05); timing window {window} steps",
        verdict=agreement(ok),
        margins=margins,
        notes=[
            f"config {config}",
            f"run time {r.seconds:.1f} s (2-layer + control)",
            f"crossing 0.1 at {c.first_crossing(induction, 0.1)}",
        ],
        figures=[fig],
        details={
            "model": model,
            "steps": c.steps,
            "induction": induction,
            "prev_token": prev0,
            "in_context_loss": c.in_context_loss,
            "icl_score": c.icl_score,
        },
    )


# ------------------------------------------------------------------------- Newton-Schulz
@claim(
    "icl.newton-schulz",
    source=f"{SOURCE} (Giannou et al. 2023: Newton-Schulz in a looped transformer)",
    statement="""A_{t+1} = A_t (2I - M A_t) from A_0 = M^T/(|M|_1 |M|_inf) converges
    quadratically to
    M^{-1}: the residual R_t = I - M A_t obeys |R_t| <= |R_0|^(2^t).""",
    tier=Tier.QUICK,
    falsifier=Falsifier(
        "initial guess too large",
        {"init_scale": 2.5},
        "A_0 = 2.5 M^T / |M|_2^2 has |I - M A_0| > 1: the iteration diverges",
    ),
)
def check_newton_schulz(ctx: Context, init_scale: float | None = None) -> Evidence:
    g = ctx.generator(508)
    d = 6
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    m = q @ torch.diag(torch.logspace(0, 1.5, d, dtype=torch.float64)) @ q.T  # kappa ~ 32
    initial = None
    if init_scale is not None:
        initial = init_scale * m.T / torch.linalg.matrix_norm(m, ord=2) ** 2
    iterates = newton_schulz_inverse(m, 30, initial=initial)
    eye = torch.eye(d, dtype=torch.float64)

    def spectral(r: torch.Tensor) -> float:  # inf once the iteration has overflowed
        return float(torch.linalg.matrix_norm(r, ord=2)) if torch.isfinite(r).all() else math.inf

    residual = [spectral(eye - m @ a) for a in iterates]
    r0 = residual[0]
    bound = [r0 ** (2**t) if r0 < 1 else math.inf for t in range(len(residual))]
    inverse = torch.linalg.inv(m)
    inverse_error = float(
        torch.linalg.matrix_norm(iterates[-1] - inverse) / torch.linalg.matrix_norm(inverse)
    )
    if not math.isfinite(inverse_error):
        inverse_error = math.inf
    # |R_t| - (|R_0|^(2^t) (1 + 1e-6) + 1e-13) <= 0 for every t; -inf when |R_0| >= 1 (no bound)
    excess = max(r - (b * (1 + 1e-6) + 1e-13) for r, b in zip(residual, bound, strict=True))
    margins = [
        at_most("|R_0| = |I - M A_0|", r0, 1.0),
        at_most("max_t |R_t| - (|R_0|^(2^t) (1 + 1e-6) + 1e-13)", excess, 0.0),
        at_most("|A_30 - M^-1|_F / |M^-1|_F", inverse_error, 1e-10),
    ]
    ok = all_hold(margins)
    ts = [float(t) for t in range(len(residual))]
    fig = Figure(
        title="Newton-Schulz: residual |I - M A_t|",
        xlabel="iteration t",
        ylabel="residual",
        logy=True,
        series=[
            Series("measured", ts, [max(r, 1e-17) for r in residual], "line", "o-"),
            Series("|R_0|^(2^t)", ts, [max(min(b, 1e6), 1e-17) for b in bound], "line", "--"),
        ],
    )
    return Evidence(
        predicted="|R_t| <= |R_0|^(2^t), A_t -> M^{-1}",
        measured={
            "residual": [f"{r:.2e}" for r in residual],
            "relative_inverse_error": inverse_error,
        },
        tolerance="bound with 1e-6 relative slack plus 1e-13 round-off; "
        "final relative error < 1e-10",
        verdict=agreement(ok),
        margins=margins,
        notes=[f"kappa(M) = {10**1.5:.1f}, A_0 scale {init_scale or 'M^T/(|M|_1|M|_inf)'}"],
        figures=[fig],
    )
