"""Claims ``robotics.*`` (000 §8.3.8): compounding error, chunking, multimodality, DT limits.

Every check trains the project's policies (``robotics/policies``) in its environments
(``robotics/envs``) through the experiments ``experiments/robotics_*.py`` at the size of the
context, and compares the seed's (or the literature's) qualitative prediction with the measured
numbers. Results of an experiment configuration are memoised inside this module, so a falsifier
that changes only the executor does not retrain.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

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
from transformer_math.experiments import (
    robotics_chunking_tradeoff,
    robotics_compounding,
    robotics_dt,
    robotics_multimodal,
)
from transformer_math.robotics.envs.runner import RunnerConfig
from transformer_math.theory.compounding_error import (
    bc_regret_bound,
    seed_chunked_bound,
    substituted_bound,
    worst_case_expected_cost,
)

SOURCE = "000 §8.3.8"
#: A return observed from A in the stitching data (A->D): the DT must reproduce it, which shows
#: that it was trained well enough for its failure at the stitched return to mean something.
STITCH_IN_DATA_TARGET = 3.0


def _preset(cls: Any, ctx: Context, **overrides: Any) -> Any:
    cfg = ctx.preset(cls)(seed=ctx.seed)
    return cls(**{**cfg.__dict__, **overrides}) if overrides else cfg


@lru_cache(maxsize=4)
def _trained_chunk_policies(cfg: robotics_compounding.ChunkSweepConfig):
    return robotics_compounding.train_chunk_policies(cfg)


def _compounding(cfg: robotics_compounding.CompoundingConfig):
    return robotics_compounding.evaluate_chunk_policies(cfg, _trained_chunk_policies(cfg))


@lru_cache(maxsize=8)
def _tradeoff(cfg: robotics_chunking_tradeoff.TradeoffConfig):
    return robotics_chunking_tradeoff.run(cfg)


# ------------------------------------------------------------------------- compounding error
@claim(
    "robotics.compounding-error",
    source=f"{SOURCE} 理论 B (O(T^2 eps), O(T^2 eps / k), worked example T=400, eps=0.01); "
    "Ross & Bagnell 2010",
    statement="Behaviour cloning on a noisy-expert tracking task: deviation grows superlinearly "
    "with horizon at k = 1 and falls as the chunk size k grows; worked example T=400, eps=0.01: "
    "1600 vs ~18 at k = 90 (the ~18 is T^2 eps / k, not the substitution (T/k)^2 eps).",
    tier="full",
    falsifier=Falsifier(
        "white-expert-noise",
        {"noise_tau": 0.01},
        "expert noise without temporal correlation (tau = 0.01 s < dt): the mechanism the "
        "claim relies on is removed, so neither compounding nor a chunking gain may appear",
    ),
)
def check_compounding_error(ctx: Context, noise_tau: float | None = None) -> Evidence:
    cfg = _preset(robotics_compounding.CompoundingConfig, ctx,
                  **({} if noise_tau is None else {"noise_tau": noise_tau}))
    res = _compounding(cfg)
    ctx.report_progress(1.0)
    single = res.get(1, "open_loop")
    curve = np.asarray(single.error_curve)
    h = len(curve)
    cumulative = np.cumsum(curve)
    # log-log slope of the cumulative deviation between T = H/4 and T = H
    slope = float(math.log(cumulative[-1] / cumulative[h // 4 - 1]) / math.log(4.0))
    early, late = float(curve[: h // 4].mean()), float(curve[-h // 4 :].mean())
    chunked = {k: res.get(k, "open_loop").mean_error for k in cfg.chunk_sizes}
    best_k = min((k for k in cfg.chunk_sizes if k > 1), key=lambda k: chunked[k])
    second_k = sorted(cfg.chunk_sizes)[1]
    example = {
        "T^2 eps (k=1)": bc_regret_bound(400, 0.01),
        "T^2 eps / k (k=90)": seed_chunked_bound(400, 0.01, 90),
        "(T/k)^2 eps (k=90, literal substitution)": substituted_bound(400, 0.01, 90),
        "worst-case expected cost k=1 (DP)": worst_case_expected_cost(400, 0.01, 1),
        "worst-case expected cost k=90, eps per chunk (DP)": worst_case_expected_cost(
            400, 0.01, 90),
        "worst-case expected cost k=90, eps per step (DP)": worst_case_expected_cost(
            400, 0.01, 90, per_step_error=True),
    }
    margins = [
        at_least("cumulative deviation log-log slope at k=1", slope, 1.1),
        at_most("error(second k) / error(k=1)", chunked[second_k] / chunked[1], 1.0),
        at_most("min_k error(k) / error(k=1)", chunked[best_k] / chunked[1], 0.9),
        at_most("DP worst case / T^2 eps (T=400, eps=0.01, k=1)",
                example["worst-case expected cost k=1 (DP)"] / example["T^2 eps (k=1)"], 1.0),
        at_most("DP worst case / T^2 eps / k (k=90, eps per chunk)",
                example["worst-case expected cost k=90, eps per chunk (DP)"]
                / example["T^2 eps / k (k=90)"], 1.0),
    ]
    ok = all_hold(margins)
    steps = list(range(1, h + 1))
    figures = [
        Figure(
            "Tracking error vs time step (open-loop chunks)", "time step", "mean |p - p_ref| (m)",
            [Series("expert", steps, res.expert.error_curve, style="k--")]
            + [Series(f"k={k}", steps, res.get(k, "open_loop").error_curve)
               for k in cfg.chunk_sizes],
        ),
        Figure(
            "Mean tracking error vs chunk size", "chunk size k", "mean error (m)",
            [Series("open loop", list(map(float, cfg.chunk_sizes)),
                    [chunked[k] for k in cfg.chunk_sizes], style="o-")]
            + ([Series("replan every step", [float(k) for k in cfg.chunk_sizes if k > 1],
                       [res.get(k, "replan").mean_error for k in cfg.chunk_sizes if k > 1],
                       style="s--")] if "replan" in cfg.modes else []),
            logx=True,
        ),
    ]
    return Evidence(
        predicted={"cumulative deviation log-log slope": "in (1, 2] (T^2 eps is an upper bound)",
                   "error(k) vs error(1)": "falls for k > 1",
                   "worked example": [1600.0, round(seed_chunked_bound(400, 0.01, 90), 2)]},
        measured={"slope": round(slope, 3), "early error": round(early, 4),
                  "late error": round(late, 4),
                  "error by k": {str(k): round(v, 4) for k, v in chunked.items()},
                  "best k": best_k},
        tolerance="slope > 1.1 (a flat error curve gives 1.0; 0.1 margin for the noise of a "
        "200-path mean); error(k2) < error(1) and min_k error(k) < 0.9 error(1) (10 % margin)",
        verdict=agreement(ok),
        notes=[
            "The seed's 1600 vs ~18 is T^2 eps vs T^2 eps / k; its derivation ('substitute T -> "
            "T/k') literally gives (T/k)^2 eps = 0.198. T^2 eps / k holds when each chunk errs "
            "with probability eps and cost is counted per step; with eps per executed step the "
            "worst case gives no gain (theory/compounding_error.py).",
            "T^2 eps = 1600 exceeds the maximal cost T = 400: the bound is vacuous at T = 400.",
            "Issue 12: the old tiny run (60 steps, 12 demos, horizon 80) was undertrained: its "
            "policies drifted with white expert noise too, and k = 8 was worse than k = 1 "
            "(ratio 1.34). Tiny now trains 1500 steps on 50 demos, horizon 200, k in 1, 4, 16.",
            f"expert noise tau {cfg.noise_tau} s; train {res.train_seconds:.1f} s, rollouts "
            f"{res.rollout_seconds:.1f} s; success by horizon at k=1: {single.success}",
        ],
        figures=figures,
        margins=margins,
        details={"worked example": example,
                 "success by k": {str(k): res.get(k, "open_loop").success
                                  for k in cfg.chunk_sizes},
                 "expert mean error": res.expert.mean_error,
                 "final losses": {str(k): v for k, v in res.final_losses.items()}},
    )


# ------------------------------------------------------------------------ chunking trade-off
@claim(
    "robotics.chunking-tradeoff",
    source=f"{SOURCE} 'chunking 的两难', 'Temporal ensemble', ACT-MPC 字典; Zhao et al. 2023; "
    "Bidirectional Decoding (ICLR 2025)",
    statement="With disturbances, long open-loop chunks cannot react (success falls as k grows); "
    "replanning every step (MPC control horizon T_a = 1 < k) keeps reactivity; ACT's temporal "
    "ensembling (oldest-first exp(-0.01 i)) lowers high-frequency action power; whether it "
    "restores reactivity is measured beside newest-first ensembling.",
    tier="full",
    falsifier=Falsifier(
        "no-disturbances",
        {"push_prob": 0.0},
        "the same sweep without pushes: long chunks then have nothing to react to",
    ),
)
def check_chunking_tradeoff(ctx: Context, push_prob: float | None = None) -> Evidence:
    cfg = _preset(robotics_chunking_tradeoff.TradeoffConfig, ctx,
                  **({} if push_prob is None else {"push_prob": push_prob}))
    res = _tradeoff(cfg)
    ctx.report_progress(1.0)
    ks = list(cfg.chunk_sizes)
    k_max = ks[-1]
    h = cfg.horizons[0]  # success over the first horizon (100 steps = 5 s at default size)

    def succ(k: int, mode: str) -> float:
        return res.get(k, "open_loop" if k == 1 else mode).success[h]

    def err(k: int, mode: str) -> float:
        return res.get(k, "open_loop" if k == 1 else mode).mean_error

    hf = {m: res.get(k_max, m).high_freq_fraction for m in cfg.modes}
    margins = [
        at_least("open-loop success drop k=1 -> k_max",
                 succ(1, "open_loop") - succ(k_max, "open_loop"), 0.1),
        at_most("replan / open-loop error at k_max",
                err(k_max, "replan") / err(k_max, "open_loop"), 1.0),
        at_most("replan error at k_max / error at k=1",
                err(k_max, "replan") / err(1, "open_loop"), 1.25),
        at_most("ACT-ensemble / open-loop high-frequency power at k_max",
                hf["act_ensemble"] / hf["open_loop"] if hf["open_loop"] > 0 else math.inf,
                1.0),
    ]
    ok = all_hold(margins)
    figures = [
        Figure(
            f"Success (error < {cfg.task.success_radius} m for {h} steps) with pushes",
            "chunk size k", "success rate",
            [Series(m, list(map(float, ks)), [succ(k, m) for k in ks], style="o-")
             for m in cfg.modes],
            logx=True,
        ),
        Figure(
            f"Share of action power above {cfg.high_freq_hz} Hz at k = {k_max}",
            "execution mode index", "high-frequency power fraction",
            [Series(m, [float(i)], [hf[m]], kind="bar") for i, m in enumerate(cfg.modes)],
        ),
    ]
    return Evidence(
        predicted={"open-loop success": "falls as k grows (by > 0.1 from k = 1 to k_max)",
                   "replan (T_a = 1)": "error at k_max below open loop and within 1.25x of k = 1",
                   "ACT ensembling": "less high-frequency action power than open loop"},
        measured={
            "success by k": {m: {str(k): round(succ(k, m), 3) for k in ks} for m in cfg.modes},
            "error by k": {m: {str(k): round(err(k, m), 4) for k in ks} for m in cfg.modes},
            f"high-freq fraction at k={k_max}": {m: round(v, 5) for m, v in hf.items()},
        },
        tolerance="success drop > 0.1 (about 3 standard errors of a rate near 0.5 with "
        f"{cfg.num_test_paths} test paths at default size; tiny sizes are indicative); replan "
        "error within 25 % of single-step BC (pushes make errors vary by ~10 % between k)",
        verdict=agreement(ok),
        notes=[
            "ACT-style oldest-first ensembling weighs the oldest (least informed) prediction most, "
            "which delays feedback; see 'success by k' for act_ensemble vs newest_ensemble and "
            "replan: reactivity is measured, not assumed.",
            "Issue 12: the old tiny run (60 steps, 12 demos, 16 paths, push_prob 0.05) had "
            "success 0.125 even at k = 1; tiny now trains 2500 steps on 100 demos, horizon "
            "200, push_prob 0.01, 400 test paths, k in 1, 16.",
            f"push_prob {cfg.push_prob}, push speed {cfg.push_speed} m/s; train "
            f"{res.train_seconds:.1f} s, rollouts {res.rollout_seconds:.1f} s",
        ],
        figures=figures,
        margins=margins,
        details={"expert success": res.expert.success, "expert error": res.expert.mean_error},
    )


# --------------------------------------------------------------------------- multimodality
@claim(
    "robotics.multimodal-actions",
    source=f"{SOURCE} (ACT's CVAE); Zhao et al. 2023",
    statement="On a go-left-or-right obstacle task an MSE policy averages the modes and collides; "
    "a CVAE (ACT with z sampled once per episode) picks one mode and does not.",
    tier="full",
    falsifier=Falsifier(
        "deterministic-mean-regressor",
        {"use_latent": False, "reconstruction_loss": "mse"},
        "ACT's architecture trained with z fixed to 0 (no encoder, no KL) and an MSE loss: a "
        "deterministic conditional-mean regressor",
    ),
)
def check_multimodal_actions(ctx: Context, use_latent: bool = True,
                             reconstruction_loss: str = "l1") -> Evidence:
    cfg = _preset(robotics_multimodal.MultimodalConfig, ctx, use_latent=use_latent,
                  reconstruction_loss=reconstruction_loss)
    res = _multimodal(cfg)
    ctx.report_progress(1.0)
    mse, act = res.outcomes["mse"], res.outcomes["act_sampled"]
    margins = [
        at_least("MSE collision rate", mse.collision_rate, 0.5),
        at_most("CVAE collision rate", act.collision_rate, 0.2),
        close_to("CVAE left fraction (vs 0.5)", act.left_fraction, 0.5, abs_=0.35),
    ]
    ok = all_hold(margins)
    series = []
    for key, style in (("mse", "r-"), ("act_sampled", "b-"), ("act_zero", "g:")):
        for j, path in enumerate(res.outcomes[key].paths):
            arr = np.asarray(path)
            series.append(Series(res.outcomes[key].name if j == 0 else "", arr[:, 0].tolist(),
                                 arr[:, 1].tolist(), style=style))
    return Evidence(
        predicted={"MSE collision rate": ">= 0.5", "CVAE collision rate": "<= 0.2",
                   "CVAE uses both sides": "left fraction in [0.15, 0.85]"},
        measured={k: {"collision": round(o.collision_rate, 3),
                      "success": round(o.success_rate, 3),
                      "left fraction": round(o.left_fraction, 3)
                      if math.isfinite(o.left_fraction) else None}
                  for k, o in res.outcomes.items()},
        tolerance="thresholds 0.5 / 0.2 separate 'averages the modes' from 'commits to one'; "
        "both sides in [0.15, 0.85] (the demos are 50/50)",
        verdict=agreement(ok),
        notes=[f"demonstrations going left: {res.demo_left_fraction:.2f}; run {res.seconds:.1f} s",
               "ACT with z = 0 is shown for reference (not part of the verdict).",
               "Issue 12: tiny now uses 200 demos and 100 test starts (was 20 and 8), 400 MSE "
               "and 1000 ACT steps (was 40 and 20); there the CVAE avoids the obstacle (0.09-"
               "0.19 over seeds 0-4) but favours one side at seeds 1 and 2: the claim is "
               "decided at the default size. ACT with z = 0 "
               "(L1, chunks of 10) also avoids the obstacle there (0.18): L1 chunking already "
               "picks a side."],
        margins=margins,
        figures=[Figure("Bimodal obstacle task: rollouts (obstacle at (0, 1), goal (0, 2))",
                        "x", "y", series)],
    )


@lru_cache(maxsize=4)
def _multimodal(cfg: robotics_multimodal.MultimodalConfig):
    return robotics_multimodal.run(cfg)


# ---------------------------------------------------------------------- Decision Transformer
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
    cfg = _preset(robotics_dt.StitchingConfig, ctx,
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
    fig_series = []
    for name, roll, style in (("Q-learning", res.q_learning, "b-"), ("DT (R=4)", res.dt, "r--")):
        cells = np.asarray(roll.cells, float)
        fig_series.append(Series(name, cells[:, 0].tolist(), cells[:, 1].tolist(), style=style))
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
        figures=[Figure("Stitching gridworld: paths from A (0,3); B (3,6), C (6,6), D (6,0)",
                        "x", "y", fig_series)],
    )


@lru_cache(maxsize=4)
def _trained_runner_dt(cfg: robotics_dt.ReachabilityConfig):
    return robotics_dt.train_reachability_dt(cfg)


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
    cfg = _preset(robotics_dt.ReachabilityConfig, ctx)
    res = robotics_dt.evaluate_reachability(cfg, _trained_runner_dt(cfg), decrement_return)
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
        figures=[Figure(
            "Decision Transformer: achieved vs target return (1-D runner)", "target return",
            "achieved return",
            [Series("achieved", res.targets, res.achieved, style="o-"),
             Series("target = achieved", res.targets, res.targets, style="k:")],
            vlines=[(res.data_min, "data min"), (res.data_max, "data max")],
            hlines=[(res.optimum, "optimum")],
        )],
        details={"targets": res.targets, "achieved": res.achieved},
    )
