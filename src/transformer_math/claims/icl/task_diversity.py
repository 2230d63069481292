"""Task diversity: memorisation (dMMSE) for few pretraining tasks, in-context regression on fresh
tasks for many (000 §8.3.6 第三个视角; Raventos et al. 2023). The run is
``experiments.task_diversity`` (memoised). Also the quick check of the prompt layout the
experiment trains on (``icl.regression-prompt-causal``)."""

from __future__ import annotations

import math

import torch

from transformer_math.claims.icl._shared import SOURCE, preset, run_experiment
from transformer_math.claims.registry import (
    Context,
    Correction,
    Evidence,
    Figure,
    Margin,
    Series,
    Tier,
    at_least,
    at_most,
    claim,
    decide,
    exceeds,
)
from transformer_math.claims.seeds import over_seeds
from transformer_math.data.regression import sample_regression
from transformer_math.experiments import task_diversity
from transformer_math.nn.transformer import build_transformer


def contrast(a: float, b: float) -> float:
    """(a - b) / (a + b) in [-1, 1], the sign of a - b made scale-free (0 when both vanish)."""
    return (a - b) / (a + b) if a + b > 0 else 0.0


def regime_margins(num_tasks: list[int], dd: list[float], dr: list[float], mse: list[float],
                   ridge_mse: float, zero_mse: float) -> list[Margin]:
    """Closer to dMMSE at the smallest M; closer to ridge AND learned at some larger M.

    "Learned": the fresh-task MSE recovers at least half of the gain from the zero predictor to
    ridge, i.e. the unrecovered fraction (e - ridge) / (zero - ridge) is <= 1/2. The orderings
    are contrasts (the distances scale with |w|^2 of the pool tasks, which differs by seed).
    """
    ridge_side = max(
        (min(contrast(a, b), 0.5 - (e - ridge_mse) / (zero_mse - ridge_mse))
         for m, a, b, e in zip(num_tasks, dd, dr, mse, strict=True) if m > num_tasks[0]),
        default=-math.inf,
    )
    return [
        at_least("(d_ridge - d_dmmse) / (d_ridge + d_dmmse) at the smallest M",
                 contrast(dr[0], dd[0]), 0.0),
        at_least("max over larger M of min((d_dmmse - d_ridge) / (d_dmmse + d_ridge), "
                 "1/2 - unrecovered gain)", ridge_side, 0.0),
    ]


def diversity_figure(num_tasks: list[int], dd: list[float], dr: list[float],
                     log2_m_star: float | None) -> Figure:
    xs = [float(m) for m in num_tasks]
    return Figure(
        title="Task diversity: distance of the model to dMMSE and to ridge (fresh tasks)",
        xlabel="number of pretraining tasks M",
        ylabel="mean squared distance",
        logx=True,
        series=[Series("to dMMSE", xs, dd, "line", "o-"), Series("to ridge", xs, dr, "line", "s-")],
        vlines=[(2**log2_m_star, "M*")] if log2_m_star is not None else [],
    )


def memorise_then_learn(num_tasks: list[int], dd: list[float], dr: list[float],
                        mse: list[float], ridge_mse: float, zero_mse: float) -> dict[str, float]:
    """The two numbers the narrowed claim (version 2) decides on, for one seed.

    ``memorised``: contrast (d_ridge - d_dmmse) / (d_ridge + d_dmmse) at the smallest M (> 0:
    closer to dMMSE, the posterior over the pool). ``learned``: 1/2 minus the unrecovered
    fraction (e - ridge) / (zero - ridge) of the fresh-task MSE at the largest M (>= 0: at least
    half of the gain from the zero predictor to ridge, the Bayes estimator, is recovered).
    ``ridge_side``: the contrast (d_dmmse - d_ridge) / (d_dmmse + d_ridge) at the largest M and
    ``baseline_gap`` the mean squared difference of dMMSE and ridge there, relative to ridge's
    MSE: reported, not decided (see the claim's notes).
    """
    return {
        "memorised": contrast(dr[0], dd[0]),
        "learned": 0.5 - (mse[-1] - ridge_mse) / (zero_mse - ridge_mse),
        "ridge_side": contrast(dd[-1], dr[-1]),
        "fresh_mse_smallest_M": mse[0],
        "fresh_mse_largest_M": mse[-1],
        "ridge_mse": ridge_mse,
    }


NOTE_NARROWED = (
    "version 2 (issue 14), NARROWED: Raventos et al.'s 'closest to ridge for large M' is not "
    "reproduced at tiny. At D = 1 the dMMSE of M = 128 pool tasks nearly coincides with ridge "
    "(fresh-task MSE 0.592 vs 0.590 at seed 0), so which one the model is closer to is noise "
    "(seeds 1-2 failed that ordering before); where the two baselines do differ (seed 0, "
    "M = 2..32, 1000 steps) the trained model stays closer to dMMSE (d_dmmse 0.006-0.094 vs "
    "d_ridge 0.055-0.48): within this budget M* lies above 32, where dMMSE and ridge are no "
    "longer distinguishable in D = 1. Larger D needs more steps than the tiny tier allows "
    "(issue 12: D = 2, M = 32 did not learn in 1000 steps at d_model 16). What is decided: "
    "memorisation at the smallest M and in-context regression on fresh tasks at the largest "
    "(the seed's 'task memory' vs 'true ICL', 000:999), on every seed; the ridge-vs-dMMSE "
    "ordering at the largest M is reported per seed."
)


NOTE_GRID = (
    "version 3 (issue 19): the default grid is M in {2, 8, 32, 1024} (was 2, 4, 8, 16, 32, 64, "
    "256, 1024). The decision reads only the smallest and the largest M, and every M trains from "
    "its own generator on the same evaluation prompts, so the decided numbers are those of "
    "version 2; the curve and M* have four points instead of eight (half the training). "
    "'tmath sweep task_diversity --grid num_tasks=...' draws a finer grid."
)


@claim(
    "icl.task-diversity-transition",
    source=f"{SOURCE} (第三个视角: 相变); Raventos et al. 2023",
    statement="""Sweeping the number M of pretraining tasks, a small transformer behaves like task
    memorisation for small M (on fresh tasks it is closer to dMMSE, the posterior over the M pool
    tasks, than to ridge) and learns in context for large M (its fresh-task MSE recovers at least
    half of the gain from the zero predictor to ridge, the Bayes estimator), on every seed.
    Narrowed in version 2: Raventos et al.'s 'closest to ridge for large M' is reported, not
    decided, at the tiny size (see the notes).""",
    tier=Tier.FULL,
    falsifier="data.regression-label-before-input",
    expected="verified",
    version=3,
    seed_refs=[("000", 993, 1003)],
    corrections=[
        Correction(
            seed="000", line=1001,
            says="above M* the discrete prior 'densifies' into a continuous prior and the model "
            "performs Bayesian estimation on it",
            correct="the pretraining prior stays the uniform distribution over the M pool tasks; "
            "above the threshold the transformer departs from the Bayes-optimal estimator for "
            "that prior (dMMSE) and behaves like ridge, the Bayes estimator of a Gaussian prior "
            "over all tasks that it was not trained on: the paper calls this in-context "
            "learning non-Bayesian",
            source="Raventos, Paul, Chen, Ganguli, NeurIPS 2023 (arXiv 2306.15063), abstract "
            "('this capability hinges on it deviating from the Bayes optimal estimator with the "
            "pretraining distribution as the prior')"),
        Correction(
            seed="000", line=1626,
            says="source of the third view: Bayesian reading of the task-diversity threshold",
            correct="the paper's title and result are the emergence of NON-Bayesian ICL: below "
            "M* the model is Bayes-optimal for the pretraining prior (dMMSE), above it it is "
            "not (it matches ridge)",
            source="Raventos et al. 2023, title and abstract"),
    ],
)
def check_task_diversity(ctx: Context) -> Evidence:
    def one(c: Context) -> tuple[dict[str, float], task_diversity.TaskDiversityResult]:
        config = preset(task_diversity.TaskDiversityConfig, c)
        r = run_experiment(task_diversity, config, c)
        zero_mse = config.x_dim + config.noise_var  # predicting 0: E y^2 = D tau^2 + sigma^2
        return memorise_then_learn(r.num_tasks, r.distance_to_dmmse, r.distance_to_ridge,
                                   r.model_mse, r.ridge_mse, zero_mse), r

    sweep = over_seeds(ctx, one)
    r = sweep.runs[0]
    m_small, m_large = r.num_tasks[0], r.num_tasks[-1]
    margins = [
        sweep.at_least("memorised", 0.0, f"(d_ridge - d_dmmse) / (d_ridge + d_dmmse) at "
                       f"M = {m_small}"),
        sweep.at_least("learned", 0.0, f"1/2 - unrecovered gain (e - ridge) / (zero - ridge) "
                       f"at M = {m_large}"),
    ]
    log2_m_star = task_diversity.crossover_log2(
        [math.log2(m) for m in r.num_tasks],
        [a - b for a, b in zip(r.distance_to_dmmse, r.distance_to_ridge, strict=True)])
    return Evidence(
        predicted=f"closer to dMMSE at M = {m_small}; fresh-task MSE within half of the gap "
        f"from ridge to the zero predictor at M = {m_large} (every seed)",
        measured={k: [round(v, 4) for v in vals] for k, vals in sweep.values.items()},
        tolerance="orderings (contrast > 0) and half of the possible in-context gain: no "
        "tuned slack",
        verdict=decide(margins),
        margins=margins,
        per_seed=sweep.to_json(),
        notes=[
            f"scaled down per FACTS.md: {r.config} (seed {sweep.seeds[0]}); seeds {sweep.seeds}",
            f"run time of the first seed {r.seconds:.1f} s",
            NOTE_NARROWED,
            f"ridge side at M = {m_large} (reported): contrast (d_dmmse - d_ridge) / sum per "
            f"seed {[round(v, 4) for v in sweep['ridge_side']]}",
            "falsifier = planted bug data.regression-label-before-input (the prompt puts y_i "
            "before x_i: the read-out sees its own target); it was the untrained model",
            "Raventos et al.'s M* = 2^11..2^14 needs ~500k steps; short training moves M* down",
            NOTE_GRID,
        ],
        figures=[diversity_figure(r.num_tasks, r.distance_to_dmmse, r.distance_to_ridge,
                                  log2_m_star)],
        details={"num_tasks": r.num_tasks, "dmmse_mse": r.dmmse_mse,
                 "log2_M_star_first_seed": log2_m_star},
    )


@claim(
    "icl.regression-prompt-causal",
    source=f"{SOURCE} (输入编码); Garg et al. 2022 (prompts as sequences)",
    statement="""In the interleaved prompt x_1, y_1, ..., x_K, y_K read at the x_i tokens under the
    causal mask (the setting of icl.task-diversity-transition), the prediction of y_i depends on
    the pairs before i and not on y_i or anything later: changing y_j leaves the predictions at
    i <= j unchanged (to float64 rounding) and changes those at i > j.""",
    tier=Tier.QUICK,
    falsifier="data.regression-label-before-input",
    expected="verified",
    version=1,
    seed_refs=[("000", 925, 931), ("000", 993, 999)],
)
def check_regression_prompt_causal(ctx: Context) -> Evidence:
    config = task_diversity.TaskDiversityConfig.tiny(ctx.seed)
    model = build_transformer(config.model_config(), ctx.generator(512)).double().eval()
    batch = sample_regression(16, config.num_points, config.x_dim, generator=ctx.generator(513),
                              noise_var=config.noise_var, dtype=torch.float64)
    with torch.no_grad():
        base = task_diversity.regression_predictions(model, batch.x, batch.y)
        leak, reach = 0.0, math.inf
        for j in range(config.num_points):
            y = batch.y.clone()
            y[:, j] += 1.0
            moved = (task_diversity.regression_predictions(model, batch.x, y) - base).abs()
            leak = max(leak, float(moved[:, :j + 1].max()))
            if j + 1 < config.num_points:
                reach = min(reach, float(moved[:, j + 1:].amax(0).min()))
    margins = [
        # float64 forward pass of a 2-layer model: rounding ~1e-15; 1e-10 leaves room
        at_most("max |change of the predictions at i <= j| when y_j moves by 1", leak, 1e-10),
        exceeds("min over i > j of the largest change when y_j moves by 1", reach, 1e-6),
    ]
    return Evidence(
        predicted="no change at i <= j; a change at every i > j",
        measured={"max_change_at_or_before": leak, "min_change_after": reach},
        tolerance="1e-10 (float64 rounding) and 1e-6 (an untrained model still mixes its "
        "inputs)",
        verdict=decide(margins),
        margins=margins,
        notes=["the task-diversity model (TaskDiversityConfig.tiny().model_config()) at "
               "initialisation, float64; data.regression.interleave_regression_tokens and "
               "experiments.task_diversity.regression_predictions"],
    )
