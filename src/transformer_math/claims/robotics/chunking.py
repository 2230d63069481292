"""Behaviour cloning with action chunks: compounding error and the chunking trade-off under
disturbances (000 §8.3.8 理论 B; Ross & Bagnell 2010; Zhao et al. 2023)."""

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
)
from transformer_math.claims.robotics._common import SOURCE, preset
from transformer_math.experiments import robotics_chunking_tradeoff, robotics_compounding
from transformer_math.experiments.memo import memoized
from transformer_math.theory.compounding_error import (
    bc_regret_bound,
    seed_chunked_bound,
    substituted_bound,
    worst_case_expected_cost,
)


def _compounding(cfg: robotics_compounding.CompoundingConfig
                 ) -> robotics_compounding.ChunkSweepResult:
    """Evaluate the (memoised) trained chunk policies: a falsifier that changes only the
    executor does not retrain."""
    trained = memoized(robotics_compounding.train_chunk_policies, cfg)
    return robotics_compounding.evaluate_chunk_policies(cfg, trained)


def _compounding_figures(cfg: robotics_compounding.CompoundingConfig,
                         res: robotics_compounding.ChunkSweepResult,
                         chunked: dict[int, float]) -> list[Figure]:
    """Error curves over time for each k, and the mean error against k."""
    steps = list(range(1, len(res.get(1, "open_loop").error_curve) + 1))
    return [
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
    cfg = preset(robotics_compounding.CompoundingConfig, ctx,
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
        figures=_compounding_figures(cfg, res, chunked),
        margins=margins,
        details={"worked example": example,
                 "success by k": {str(k): res.get(k, "open_loop").success
                                  for k in cfg.chunk_sizes},
                 "expert mean error": res.expert.mean_error,
                 "final losses": {str(k): v for k, v in res.final_losses.items()}},
    )


# ------------------------------------------------------------------------ chunking trade-off
def _tradeoff_figures(cfg: robotics_chunking_tradeoff.TradeoffConfig,
                      res: robotics_compounding.ChunkSweepResult) -> list[Figure]:
    """Success against k per execution mode, and the high-frequency share at the largest k."""
    ks, h = list(cfg.chunk_sizes), cfg.horizons[0]
    k_max = ks[-1]

    def succ(k: int, mode: str) -> float:
        return res.get(k, "open_loop" if k == 1 else mode).success[h]

    hf = {m: res.get(k_max, m).high_freq_fraction for m in cfg.modes}
    return [
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
    cfg = preset(robotics_chunking_tradeoff.TradeoffConfig, ctx,
                  **({} if push_prob is None else {"push_prob": push_prob}))
    res = memoized(robotics_chunking_tradeoff.run, cfg)
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
        figures=_tradeoff_figures(cfg, res),
        margins=margins,
        details={"expert success": res.expert.success, "expert error": res.expert.mean_error},
    )
