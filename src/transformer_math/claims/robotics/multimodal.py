"""Multimodal demonstrations: an MSE policy averages the modes, ACT's CVAE commits to one
(000 §8.3.8; Zhao et al. 2023)."""

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
from transformer_math.experiments import robotics_multimodal
from transformer_math.experiments.memo import memoized


def _rollout_figure(res: robotics_multimodal.MultimodalResult) -> Figure:
    """The test rollouts of the MSE policy and of ACT with sampled and zero latents."""
    series = []
    for key, style in (("mse", "r-"), ("act_sampled", "b-"), ("act_zero", "g:")):
        for j, path in enumerate(res.outcomes[key].paths):
            arr = np.asarray(path)
            series.append(Series(res.outcomes[key].name if j == 0 else "", arr[:, 0].tolist(),
                                 arr[:, 1].tolist(), style=style))
    return Figure("Bimodal obstacle task: rollouts (obstacle at (0, 1), goal (0, 2))", "x", "y",
                  series)


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
    cfg = preset(robotics_multimodal.MultimodalConfig, ctx, use_latent=use_latent,
                  reconstruction_loss=reconstruction_loss)
    res = memoized(robotics_multimodal.run, cfg)
    ctx.report_progress(1.0)
    mse, act = res.outcomes["mse"], res.outcomes["act_sampled"]
    margins = [
        at_least("MSE collision rate", mse.collision_rate, 0.5),
        at_most("CVAE collision rate", act.collision_rate, 0.2),
        close_to("CVAE left fraction (vs 0.5)", act.left_fraction, 0.5, abs_=0.35),
    ]
    ok = all_hold(margins)
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
        figures=[_rollout_figure(res)],
    )
