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
    return Evidence(
        predicted="|y_hat_LSA - x_q^T w_1| = 0 (one GD step)",
        measured=f"max error {worst:.2e} over {len(cases)} random (d, N, eta), 32 prompts each",
        tolerance="< 1e-10 (float64 round-off of sums of <= 40 products is ~1e-14)",
        verdict=agreement(worst < 1e-10),
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
    example_ok = all(abs(a - b) < 1e-12 for a, b in zip(example_meas, example_pred, strict=True))
    # (b) a random problem: w_L read from the L-layer model with basis queries
    g = ctx.generator(502)
    d, n, max_layers = 4, 24, 40
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.randn(n, generator=g, dtype=torch.float64)
    hess, b = least_squares_terms(x, y)
    lam_max = float(torch.linalg.eigvalsh(hess).max())
    eta = eta_factor / lam_max
    w_star = torch.linalg.lstsq(x, y).solution
    xb = x.expand(d, n, d)
    yb = y.expand(d, n)
    basis = torch.eye(d, dtype=torch.float64)
    layer_grid = [1, 2, 4, 8, 16, 24, 32, 40]
    measured_err, bound, neumann_gap = [], [], 0.0
    sums = neumann_partial_sums(hess, b, eta, max_layers)
    bounds = neumann_error_bound(hess, w_star, eta, max_layers)
    for layers in layer_grid:
        with torch.no_grad():
            w_l = _constructed_model(d, eta, n, layers, -1.0).predict(
                regression_tokens(xb, yb, basis)
            )
        measured_err.append(float(torch.linalg.vector_norm(w_l - w_star)))
        bound.append(float(bounds[layers]))
        neumann_gap = max(neumann_gap, float((w_l - sums[layers]).abs().max()))
    within_bound = all(
        m <= bd * (1 + 1e-9) + 1e-12 for m, bd in zip(measured_err, bound, strict=True)
    )
    converged = measured_err[-1] < 1e-3 * float(torch.linalg.vector_norm(w_star))
    ok = example_ok and within_bound and converged and neumann_gap < 1e-8
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
        notes=[
            f"eta = {eta_factor} / lambda_max(H) = {eta:.4f}; 2/lambda_max = {2 / lam_max:.4f}",
            f"max |model w_L - Neumann partial sum| = {neumann_gap:.2e}",
        ],
        figures=[fig],
        details={"kappa": float(lam_max / torch.linalg.eigvalsh(hess).min())},
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
        verdict=agreement(cosine >= 0.99),
        notes=[
            f"config {config}",
            f"run time {r.seconds:.1f} s",
            f"eta (line search) {r.eta_gd:.4f} vs learned eta {r.eta_model[index]:.4f}",
            f"loss model {r.model_loss[index]:.4f} vs GD {r.gd_loss:.4f}",
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
        verdict=agreement(rel <= 0.15),
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
    dim, k, noise_var, tau2, m = 4, 32, 0.25, 1.0, 32
    # (a) posterior concentration (dMMSE posterior over a pool; true task drawn from the pool)
    pool = make_task_pool(m, dim, generator=g, dtype=torch.float64)
    index = torch.randint(m, (2000,), generator=g)
    x = torch.randn(2000, k, dim, generator=g, dtype=torch.float64)
    y = (x @ pool[index].unsqueeze(-1)).squeeze(-1) + noise_var**0.5 * torch.randn(
        2000, k, generator=g, dtype=torch.float64
    )
    mass = [
        float(
            dmmse_posterior(x[:, :i], y[:, :i], pool, noise_var)
            .gather(1, index.unsqueeze(1))
            .mean()
        )
        for i in range(k + 1)
    ]
    concentrates = (
        abs(mass[0] - 1.0 / m) < 1e-12
        and mass[-1] >= 0.99
        and all(b >= a - 0.01 for a, b in itertools.pairwise(mass))
    )
    # (b) ridge risk over lambda under the Gaussian prior, common random numbers
    batch = sample_regression(20000, 7, dim, generator=g, noise_var=noise_var, dtype=torch.float64)
    xc, yc, xq, yq = batch.split_query()
    claimed = noise_var / tau2 if lambda_rule == "sigma2_over_tau2" else tau2 / noise_var
    grid = [noise_var / tau2 * f for f in (1 / 16, 1 / 4, 1, 4, 16)]
    if claimed not in grid:
        grid.append(claimed)
    grid.sort()
    risks = [float(((ridge_predict(xc, yc, xq, lam) - yq) ** 2).mean()) for lam in grid]
    best = grid[min(range(len(grid)), key=risks.__getitem__)]
    err = (ridge_predict(xc, yc, xq, claimed) - yq) ** 2
    risk_claimed, stderr = float(err.mean()), float(err.std() / math.sqrt(err.numel()))
    eye = torch.eye(dim, dtype=torch.float64)
    post_cov = torch.linalg.inv(xc.transpose(1, 2) @ xc / noise_var + eye / tau2)
    bayes = noise_var + float(torch.diagonal(post_cov, dim1=1, dim2=2).sum(-1).mean())
    risk_ok = abs(risk_claimed - bayes) <= 4 * stderr
    ok = concentrates and best == claimed and risk_ok
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
        tolerance="risk within 4 standard errors of the Monte Carlo mean; "
        "posterior mass >= 0.99 at "
        "K = 32 and non-decreasing up to 0.01 (Monte Carlo)",
        verdict=agreement(ok),
        notes=[
            f"D = {dim}, sigma^2 = {noise_var}, tau^2 = {tau2}, M = {m}; ridge on 6 context pairs, "
            f"20000 prompts; lambda rule {lambda_rule}"
        ],
        figures=[
            fig,
            Figure(
                title=f"dMMSE posterior mass on the true task (M = {m})",
                xlabel="context examples K",
                ylabel="mean posterior mass",
                series=[Series("measured", [float(i) for i in range(k + 1)], mass, "line", "o-")],
                hlines=[(1.0 / m, "prior 1/M"), (0.99, "0.99")],
            ),
        ],
        details={"lambda_grid": grid, "risks": risks, "stderr": stderr},
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
    small_follows_dmmse = dd[0] < dr[0]
    ridge_regime = [
        m
        for m, a, b, e in zip(r.num_tasks, dd, dr, mse, strict=True)
        if b < a and e <= learned_line and m > r.num_tasks[0]
    ]
    above_line = [m for m, e in zip(r.num_tasks, mse, strict=True) if e > learned_line]
    ok = small_follows_dmmse and bool(ridge_regime)
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
        notes=[
            f"scaled down per FACTS.md: {config}",
            f"run time {r.seconds:.1f} s",
            f"ridge MSE {r.ridge_mse:.3f}, zero-predictor MSE {zero_mse:.3f}",
            "Raventos et al.'s M* = 2^11..2^14 needs ~500k steps; short training moves M* down",
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
    ok = (
        c.num_layers >= 2
        and induction[-1] >= 0.5
        and prev0[-1] >= 0.4
        and cross is not None
        and abs(drop - cross) <= window
        and control_max < 0.2
    )
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
    ok = (
        r0 < 1
        and all(r <= b * (1 + 1e-6) + 1e-13 for r, b in zip(residual, bound, strict=True))
        and inverse_error < 1e-10
    )
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
        notes=[f"kappa(M) = {10**1.5:.1f}, A_0 scale {init_scale or 'M^T/(|M|_1|M|_inf)'}"],
        figures=[fig],
    )
