"""Task diversity transition: dMMSE for few pretraining tasks, ridge for many (000 §8.3.6 第三个
视角; Raventos et al. 2023). The run is ``experiments.task_diversity`` (memoised)."""

from __future__ import annotations

import math
from typing import Any

from transformer_math.claims.icl._shared import SOURCE, preset, run_experiment
from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Figure,
    Margin,
    Series,
    Tier,
    agreement,
    all_hold,
    at_least,
    claim,
)
from transformer_math.experiments import task_diversity


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


NOTE_ISSUE_12 = (
    "issue 12: the orderings are reported as contrasts (a - b) / (a + b) (same signs; "
    "the distances scale with the pool's |w|^2). NOT firm at tiny: at D = 1, M = 128 the "
    "dMMSE and ridge predictions differ by only 0.001-0.005 in mean square, so which one "
    "the model is closer to is decided by noise (seeds 1-4 fail the large-M ordering); "
    "tried: D = 1 with M = 8..32 stays closer to dMMSE after 1000 steps, D = 2 (M = 32) "
    "does not learn in 1000 steps at d_model 16. Needs a longer tiny run (open)."
)


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
    config = preset(task_diversity.TaskDiversityConfig, ctx)
    r = run_experiment(task_diversity, config, ctx)
    if models == "trained":
        dd, dr, mse = r.distance_to_dmmse, r.distance_to_ridge, r.model_mse
    else:
        dd, dr, mse = r.untrained_distance_to_dmmse, r.untrained_distance_to_ridge, r.untrained_mse
    zero_mse = config.x_dim + config.noise_var  # predicting 0: E y^2 = D tau^2 + sigma^2
    margins = regime_margins(r.num_tasks, dd, dr, mse, r.ridge_mse, zero_mse)
    # runs still on the predict-zero plateau follow neither baseline: reported, not used
    learned_line = r.ridge_mse + 0.5 * (zero_mse - r.ridge_mse)
    ridge_regime = [m for m, a, b, e in zip(r.num_tasks, dd, dr, mse, strict=True)
                    if b < a and e <= learned_line and m > r.num_tasks[0]]
    above_line = [m for m, e in zip(r.num_tasks, mse, strict=True) if e > learned_line]
    log2_m_star = task_diversity.crossover_log2(
        [math.log2(m) for m in r.num_tasks], [a - b for a, b in zip(dd, dr, strict=True)])
    details: dict[str, Any] = {"num_tasks": r.num_tasks, "dmmse_mse": r.dmmse_mse,
                               "models": models, "ridge_regime": ridge_regime,
                               "above_learned_line": above_line}
    return Evidence(
        predicted="closer to dMMSE at the smallest M; closer to ridge at some larger M where "
        "the model has learned (MSE <= ridge + half the gap to the zero predictor)",
        measured={
            "log2_M_star": None if log2_m_star is None else round(log2_m_star, 2),
            "d_dmmse": [round(v, 3) for v in dd],
            "d_ridge": [round(v, 3) for v in dr],
            "mse": [round(v, 3) for v in mse],
        },
        tolerance="orderings of distances (no numeric slack); learning criterion: half of the "
        "possible in-context gain from the zero predictor to ridge",
        verdict=agreement(all_hold(margins)),
        margins=margins,
        notes=[
            f"scaled down per FACTS.md: {config}",
            f"run time {r.seconds:.1f} s",
            f"ridge MSE {r.ridge_mse:.3f}, zero-predictor MSE {zero_mse:.3f}",
            "Raventos et al.'s M* = 2^11..2^14 needs ~500k steps; short training moves M* down",
            NOTE_ISSUE_12,
            f"ridge regime (closer to ridge and learned) at M = {ridge_regime}",
            f"fresh-task MSE above ridge + half the gap ({learned_line:.3f}) at M = {above_line}: "
            "expected below M* (the model predicts with memorised pool tasks); above M* it means "
            "that run stayed on the predict-zero plateau and follows neither baseline",
        ],
        figures=[diversity_figure(r.num_tasks, dd, dr, log2_m_star)],
        details=details,
    )
