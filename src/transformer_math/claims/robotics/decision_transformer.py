"""Decision Transformer limits: no stitching of sub-trajectories, and return conditioning that
saturates above the data's returns (000 §8.3.8; Brandfonbrener et al. 2022)."""

from __future__ import annotations

import math

import numpy as np

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Falsifier,
    Figure,
    Series,
    agreement,
    all_hold,
    at_least,
    at_most,
    claim,
    close_to,
)
from transformer_math.claims.robotics._common import SOURCE, preset
from transformer_math.experiments import robotics_dt
from transformer_math.experiments.memo import memoized
from transformer_math.robotics.envs.runner import RunnerConfig

#: A return observed from A in the stitching data (A->D): the DT must reproduce it, which shows
#: that it was trained well enough for its failure at the stitched return to mean something.
STITCH_IN_DATA_TARGET = 3.0


def _stitching_figure(res: robotics_dt.StitchingResult) -> Figure:
    """The greedy paths of Q-learning and of the DT asked for return 4."""
    fig_series = []
    for name, roll, style in (("Q-learning", res.q_learning, "b-"), ("DT (R=4)", res.dt, "r--")):
        cells = np.asarray(roll.cells, float)
        fig_series.append(Series(name, cells[:, 0].tolist(), cells[:, 1].tolist(), style=style))
    return Figure("Stitching gridworld: paths from A (0,3); B (3,6), C (6,6), D (6,0)", "x", "y",
                  fig_series)


@claim(
    "robotics.dt-stitching",
    source=f"{SOURCE} 'stitching 局限的一个具体例子'; Brandfonbrener et al. NeurIPS 2022",
    statement="On a gridworld whose data hold only A->B and B->C halves (and A->D), offline "
    "Q-learning finds A->B->C while a Decision Transformer conditioned on the full return (4) "
    "does not.",
    tier="full",
    falsifier=Falsifier(
        "full-trajectories-in-data",
        {"include_full_trajectories": True},
        "add complete A->B->C episodes to the data: now the DT must reach C",
    ),
)
def check_dt_stitching(ctx: Context, include_full_trajectories: bool = False) -> Evidence:
    cfg = preset(robotics_dt.StitchingConfig, ctx,
                  include_full_trajectories=include_full_trajectories)
    res = robotics_dt.run_stitching(cfg, progress=ctx.report_progress)
    in_data = res.dt_by_target[STITCH_IN_DATA_TARGET]
    margins = [
        at_least("Q-learning reaches C", float(res.q_learning.reached == "C"), 1.0),
        close_to("Q-learning return from A", res.q_learning.ret, cfg.target_return, abs_=0.0),
        at_most(f"DT(R={cfg.target_return:g}) reaches C", float(res.dt.reached == "C"), 0.0),
        close_to(f"DT(R={STITCH_IN_DATA_TARGET:g}) return (A->D, in the data)", in_data.ret,
                 STITCH_IN_DATA_TARGET, abs_=0.0),
    ]
    ok = all_hold(margins)
    return Evidence(
        predicted={"Q-learning": "reaches C, return 4", "DT(target 4)": "does not reach C",
                   "DT(target 3)": "returns 3 (A->D, a return in the data)"},
        measured={"Q-learning": {"return": res.q_learning.ret, "end": res.q_learning.reached},
                  "DT by target": {str(t): {"return": r.ret, "end": r.reached or "none"}
                                   for t, r in res.dt_by_target.items()},
                  "returns from A in data": res.data_returns_at_a},
        tolerance="exact (deterministic gridworld); DT(R=3) must return 3 (trained at all)",
        verdict=agreement(ok),
        notes=[f"Q(A) = {res.q_value_at_a:.3f} with gamma {cfg.gamma}; run {res.seconds:.1f} s",
               "Return 4 is never observed from A in the data, so the DT's request is out of "
               "distribution (000 §8.3.8 可达性).",
               "Issue 12: the DT must also reproduce the in-data return 3 (A->D), so that its "
               "failure at 4 is not that of an untrained model; the old tiny DT (30 steps) "
               "reached nothing for any target and missed the falsifier. Tiny now trains width "
               "64, 2 layers, no dropout, 1000 steps on 20 episodes per segment (600 steps "
               "missed the falsifier at seed 1)."],
        margins=margins,
        figures=[_stitching_figure(res)],
    )


def _reachability_figure(res: robotics_dt.ReachabilityResult) -> Figure:
    """Achieved against target return, with the data's range and the optimum marked."""
    return Figure(
        "Decision Transformer: achieved vs target return (1-D runner)", "target return",
        "achieved return",
        [Series("achieved", res.targets, res.achieved, style="o-"),
         Series("target = achieved", res.targets, res.targets, style="k:")],
        vlines=[(res.data_min, "data min"), (res.data_max, "data max")],
        hlines=[(res.optimum, "optimum")],
    )


@claim(
    "robotics.dt-return-reachability",
    source=f"{SOURCE} 'return-conditioning 的可达性陷阱'; Brandfonbrener et al. 2022",
    statement="Achieved return tracks the target return inside the data's range and stops "
    "improving above it (although higher returns are physically reachable). The seed's stronger "
    "form, 'capped at the best return in the data', is tested too: when the DT extrapolates "
    "past the data's maximum before saturating, that form is reported as refuted.",
    tier="full",
    falsifier=Falsifier(
        "rtg-not-decremented",
        {"decrement_return": False},
        "rollout bug: the return-to-go is never reduced by the rewards collected",
    ),
)
def check_dt_return_reachability(ctx: Context, decrement_return: bool = True) -> Evidence:
    cfg = preset(robotics_dt.ReachabilityConfig, ctx)
    trained = memoized(robotics_dt.train_reachability_dt, cfg)
    res = robotics_dt.evaluate_reachability(cfg, trained, decrement_return)
    ctx.report_progress(1.0)
    targets, achieved = np.asarray(res.targets), np.asarray(res.achieved)
    span = res.data_q95 - res.data_q05
    inside = (targets >= res.data_q05) & (targets <= res.data_q95)
    above = targets > res.data_max
    gaps = np.abs(achieved[inside] - targets[inside])
    track_err = float(gaps.mean()) if inside.any() else math.nan
    # marginal gain d(achieved)/d(target) over the upper half of the targets above the range
    top = targets >= (res.data_max + targets.max()) / 2
    if top.sum() >= 2:
        gain = float(np.polyfit(targets[top], achieved[top], 1)[0])
    else:  # tiny sizes: fall back to the two largest targets
        order = np.argsort(targets)[-2:]
        gain = float((achieved[order[1]] - achieved[order[0]])
                     / max(targets[order[1]] - targets[order[0]], 1e-9))
    best_above = float(achieved[above].max()) if above.any() else math.nan
    shortfall = float(targets.max() - achieved[np.argmax(targets)])
    runner = RunnerConfig()
    # a behaviour episode's return is only defined up to its per-step noise: std
    # pace_noise * sqrt(T) (0.32 at default); tracking must be within 3 of those standard deviations
    track_tol = 3.0 * runner.pace_noise * math.sqrt(runner.horizon)
    capped_at_data_max = math.isfinite(best_above) and best_above <= res.data_max + 0.15 * span
    margins = [
        at_most("mean |achieved - target| inside the data range", track_err, track_tol),
        at_most("gain d(achieved)/d(target) over the top targets", gain, 0.25),
        at_least("shortfall / largest target", shortfall / targets.max(), 0.25),
    ]
    ok = all_hold(margins)
    return Evidence(
        predicted={"inside data range": "achieved = target (gain 1)",
                   "far above data max": "gain d(achieved)/d(target) ~ 0; target not reached",
                   "seed's cap": f"achieved <= data max ({res.data_max:.2f})"},
        measured={"mean |achieved - target| inside": round(track_err, 3),
                  "gain over the top targets": round(gain, 3),
                  "achieved at the largest target": round(float(achieved[np.argmax(targets)]), 3),
                  "best achieved above range": round(best_above, 3),
                  "capped at data max": capped_at_data_max,
                  "data returns [min, q05, q95, max]": [round(res.data_min, 2),
                                                        round(res.data_q05, 2),
                                                        round(res.data_q95, 2),
                                                        round(res.data_max, 2)]},
        tolerance=f"tracking: mean gap <= {track_tol:.2f} = 3 x the return noise of one "
        "behaviour episode (pace_noise sqrt(T)); cap: within 15 % of the data's 5-95 % return "
        "span; saturation: fitted gain <= 0.25 (inside the range it is 1) and a shortfall of at "
        "least 25 % at the largest target",
        verdict=agreement(ok, refutes_seed=ok and not capped_at_data_max),
        notes=[
            f"run {res.seconds:.1f} s (training cached across the falsifier); RTG decremented: "
            f"{decrement_return}; optimum return {res.optimum}",
            "Issue 12: the old tiny DT (30 steps, 40 episodes) ignored its target (gap 4.98 > "
            "0.95); tiny now trains 1000 steps on 200 episodes, 31 targets from -20 to 40.",
            "Verdict 'refuted' means: tracking inside the data and saturation above it hold, "
            "but the seed's 'locked at the data's best return' does not; the DT extrapolates "
            "part of the way beyond the data maximum before it saturates.",
        ],
        margins=margins,
        figures=[_reachability_figure(res)],
        details={"targets": res.targets, "achieved": res.achieved},
    )
