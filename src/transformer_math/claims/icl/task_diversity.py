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
from transformer_math.i18n.message import msg
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
        title=msg("Task diversity: distance of the model to dMMSE and to ridge (fresh tasks)"),
        xlabel=msg("number of pretraining tasks M"),
        ylabel=msg("mean squared distance"),
        logx=True,
        series=[Series(msg("to dMMSE"), xs, dd, "line", "o-"),
                Series(msg("to ridge"), xs, dr, "line", "s-")],
        vlines=[(2**log2_m_star, "M*")] if log2_m_star is not None else [],
    )


def memorise_then_learn(num_tasks: list[int], dd: list[float], dr: list[float],
                        mse: list[float], ridge_mse: float, zero_mse: float,
                        gap_stderr: list[float] | None = None) -> dict[str, float]:
    """The numbers the claim decides on, for one seed.

    ``memorised``: contrast (d_ridge - d_dmmse) / (d_ridge + d_dmmse) at the smallest M (> 0:
    closer to dMMSE, the posterior over the pool). ``learned``: 1/2 minus the unrecovered
    fraction (e - ridge) / (zero - ridge) of the fresh-task MSE at the largest M (>= 0: at least
    half of the gain from the zero predictor to ridge, the Bayes estimator, is recovered).
    ``ridge_side``: the contrast (d_dmmse - d_ridge) / (d_dmmse + d_ridge) at the largest M and
    ``ridge_side_z``: (d_dmmse - d_ridge) / its paired standard error at the largest M
    (``gap_stderr``, per prompt): >= 3 decides that the model is closer to ridge there (the
    seed's "approaches ridge above M*"); below 3 this run cannot decide it (issue 31).
    """
    z = {}
    if gap_stderr is not None:
        gap = dd[-1] - dr[-1]
        se = gap_stderr[-1]
        z = {"ridge_side_z": gap / se if se > 0 else (math.inf if gap > 0 else -math.inf)}
    return {**z,
        "memorised": contrast(dr[0], dd[0]),
        "learned": 0.5 - (mse[-1] - ridge_mse) / (zero_mse - ridge_mse),
        "ridge_side": contrast(dd[-1], dr[-1]),
        "fresh_mse_smallest_M": mse[0],
        "fresh_mse_largest_M": mse[-1],
        "ridge_mse": ridge_mse,
    }


NOTE_NARROWED = (
    "version 2 (issue 14), NARROWED: Raventos et al.'s 'closest to ridge for large M' was not "
    "reproduced at tiny. At D = 1 the dMMSE of M = 128 pool tasks nearly coincides with ridge "
    "(fresh-task MSE 0.592 vs 0.590 at seed 0), so which one the model is closer to is noise; "
    "where the two baselines do differ (seed 0, M = 2..32, 1000 steps) the trained model stays "
    "closer to dMMSE (d_dmmse 0.006-0.094 vs d_ridge 0.055-0.48): within this budget M* lies "
    "above 32. Default (issue 14's record): ridge-side contrast at M = 1024 +0.010 / -0.035 / "
    "-0.092 on seeds 0-2 (closer to dMMSE on two of three); re-measured in version 4 on the "
    "current default: +0.001 / +0.021 / +0.032 (next note)."
)

NOTE_INCONCLUSIVE = (
    "version 4 (issue 31): the ridge side is decided, not reported: the verdict is verified only "
    "when, on every seed, the model is closer to ridge than to dMMSE at the largest M by at "
    "least 3 paired standard errors (one-sided, P < 0.0014 per seed when the two distances are "
    "equal); otherwise inconclusive. It is not a refutation: the seed gives no M*, and short "
    "training moves M* up (Raventos et al.'s M* = 2^11..2^14 needs ~500k steps at D = 8), so "
    "a model still closer to dMMSE at this M says only that M* lies above the grid. Tiny, seed "
    "0: z = 0.35 at M = 128 (the two baselines differ by only 0.004 in mean squared prediction "
    "at D = 1). Default (this version, seeds 0-2): z = 0.10, 1.94, 2.92 at M = 1024 (contrasts "
    "+0.001, +0.021, +0.032, all on the ridge side but not 3 standard errors on any seed) "
    "although the baselines differ there by 0.115 (paired SE ~0.011). What would decide it: "
    "training "
    "long enough that this M lies clearly above M* (several times the default 2000 steps, or "
    "the large preset's 4000 steps with M up to 4096), D >= 4 so that the baselines differ, "
    "3 seeds."
)


NOTE_GRID = (
    msg("version 3 (issue 19): the default grid is M in {{2, 8, 32, 1024}} (was 2, 4, 8, 16, 32, "
        "64, 256, 1024). The decision reads only the smallest and the largest M, and every M "
        "trains from its own generator on the same evaluation prompts, so the decided numbers are "
        "those of version 2; the curve and M* have four points instead of eight (half the "
        "training). 'tmath sweep task_diversity --grid num_tasks=...' draws a finer grid.")
)


@claim(
    "icl.task-diversity-transition",
    source=f"{SOURCE} (第三个视角: 相变); Raventos et al. 2023",
    statement="""Sweeping the number M of pretraining tasks, a small transformer behaves like task
    memorisation for small M (on fresh tasks it is closer to dMMSE, the posterior over the M pool
    tasks, than to ridge), learns in context for large M (its fresh-task MSE recovers at least
    half of the gain from the zero predictor to ridge, the Bayes estimator), and at the largest
    M approaches ridge: it is closer to ridge than to dMMSE by at least 3 paired standard errors
    (every seed). The last part is what the seed's phase transition (000:997-999) predicts above
    M*; a run where it does not hold is inconclusive, not a refutation (the seed gives no M*).""",
    tier=Tier.FULL,
    falsifier="data.regression-label-before-input",
    expected="inconclusive",
    version=4,
    seed_refs=[("000", 993, 1003)],
    kind="measurement",
    audit="""Issue 31 review (P; e, f): the claim was 'verified' although the ridge-vs-dMMSE
    contrast at the largest M was +0.010/-0.035/-0.092 (closer to dMMSE on 2 of 3 seeds) and
    only 'reported'. Fixed (version 4): the seed's ridge side is now a decisive margin (closer
    to ridge than to dMMSE at the largest M by >= 3 paired standard errors on every seed, a
    sampling-error threshold); where it does not hold the verdict is inconclusive, and the
    expected verdict is inconclusive at tiny and default (tiny seed 0: z = 0.35; default
    seeds 0-2: z = 0.10, 1.94, 2.92, the contrast on the ridge side on all three but below
    3 standard errors). The two ends (memorise at
    the smallest M; recover half the zero -> ridge gain at the largest) stay the pass
    conditions. Falsifier
    data.regression-label-before-input in data/regression.py (the read-out sees its own
    target), model side.""",
    statement_zh="""扫描预训练任务数 M：M 小时小型 Transformer 表现为任务记忆（在新任务上它离
    dMMSE——对 M 个池中任务的后验——比离岭回归更近），M 大时它做上下文学习（其新任务 MSE 至少
    收回从零预测器到岭回归（贝叶斯估计）增益的一半），且在最大的 M 处逼近岭回归：它离岭回归比离
    dMMSE 更近，差距至少 3 个配对标准误（每个种子）。最后一部分正是种子的相变（000:997-999）在
    M* 之上的预言；不成立的运行记为无法判定，而不是否定（种子没有给出 M*）。""",
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
                                   r.model_mse, r.ridge_mse, zero_mse,
                                   r.distance_gap_stderr), r

    sweep = over_seeds(ctx, one)
    r = sweep.runs[0]
    m_small, m_large = r.num_tasks[0], r.num_tasks[-1]
    margins = [
        sweep.at_least("memorised", 0.0, f"(d_ridge - d_dmmse) / (d_ridge + d_dmmse) at "
                       f"M = {m_small}"),
        sweep.at_least("learned", 0.0, f"1/2 - unrecovered gain (e - ridge) / (zero - ridge) "
                       f"at M = {m_large}"),
    ]
    decisive = [
        sweep.at_least("ridge_side_z", 3.0, f"(d_dmmse - d_ridge) / paired standard error at "
                       f"M = {m_large} (closer to ridge: the seed's regime above M*)"),
    ]
    log2_m_star = task_diversity.crossover_log2(
        [math.log2(m) for m in r.num_tasks],
        [a - b for a, b in zip(r.distance_to_dmmse, r.distance_to_ridge, strict=True)])
    return Evidence(
        predicted=f"closer to dMMSE at M = {m_small}; fresh-task MSE within half of the gap "
        f"from ridge to the zero predictor at M = {m_large}; closer to ridge than to dMMSE at "
        f"M = {m_large} by >= 3 paired standard errors (decisive; every seed)",
        measured={k: [round(v, 4) for v in vals] for k, vals in sweep.values.items()},
        tolerance="orderings (contrast > 0) and half of the possible in-context gain: no "
        "tuned slack; the ridge side at 3 paired standard errors (one-sided sampling error)",
        verdict=decide(margins, decisive=decisive),
        margins=margins,
        decisive=decisive,
        per_seed=sweep.to_json(),
        notes=[
            msg("scaled down per FACTS.md: {config} (seed {seeds_0}); seeds {seeds}",
                config=r.config, seeds_0=sweep.seeds[0], seeds=sweep.seeds),
            msg("run time of the first seed {seconds:.1f} s", seconds=r.seconds),
            NOTE_NARROWED,
            NOTE_INCONCLUSIVE,
            f"ridge side at M = {m_large}: contrast (d_dmmse - d_ridge) / sum per seed "
            f"{[round(v, 4) for v in sweep['ridge_side']]}, z per seed "
            f"{[round(v, 2) for v in sweep['ridge_side_z']]}; mean squared distance of the "
            f"dMMSE and ridge predictions (first seed) {r.baseline_distance[-1]:.4f}",
            msg("falsifier = planted bug data.regression-label-before-input (the prompt puts y_i "
            "before x_i: the read-out sees its own target); it was the untrained model"),
            NOTE_GRID,
        ],
        figures=[diversity_figure(r.num_tasks, r.distance_to_dmmse, r.distance_to_ridge,
                                  log2_m_star)],
        details={"num_tasks": r.num_tasks, "dmmse_mse": r.dmmse_mse,
                 "baseline_distance_first_seed": r.baseline_distance,
                 "distance_gap_stderr_first_seed": r.distance_gap_stderr,
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
    kind="measurement",
    audit="""Issue 31 review: sound (S). Kind measurement: the library's prompt layout
    (data.regression.interleave_regression_tokens) through the project's causal Transformer
    against the prediction that y_i is invisible at i and everything later; falsifier in
    data/regression.py, which the experiments import. Kept unchanged.""",
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
        notes=[msg("the task-diversity model (TaskDiversityConfig.tiny().model_config()) at "
               "initialisation, float64; data.regression.interleave_regression_tokens and "
               "experiments.task_diversity.regression_predictions")],
    )
