"""Multimodal demonstrations: an MSE policy averages the modes, ACT's CVAE commits to one
(000 §8.3.8; Zhao et al. 2023)."""

from __future__ import annotations

import math

import numpy as np

from transformer_math.claims.registry import (
    Context,
    Evidence,
    Figure,
    Series,
    claim,
    decide,
)
from transformer_math.claims.robotics._common import SOURCE, preset
from transformer_math.claims.seeds import over_seeds
from transformer_math.experiments import memo, robotics_multimodal
from transformer_math.i18n.message import msg


def _rollout_figure(res: robotics_multimodal.MultimodalResult) -> Figure:
    """The test rollouts of the MSE policy and of ACT with sampled and zero latents."""
    series = []
    for key, style in (("mse", "r-"), ("act_sampled", "b-"), ("act_zero", "g:")):
        for j, path in enumerate(res.outcomes[key].paths):
            arr = np.asarray(path)
            series.append(Series(res.outcomes[key].name if j == 0 else "", arr[:, 0].tolist(),
                                 arr[:, 1].tolist(), style=style))
    return Figure(msg("Bimodal obstacle task: rollouts (obstacle at (0, 1), goal (0, 2))"),
                  "x", "y", series)


def _multimodal_values(ctx: Context) -> tuple[dict[str, float],
                                               robotics_multimodal.MultimodalResult]:
    """One seed: collision rates, the two-proportion z of MSE minus CVAE collisions, and how
    many starts change side between two independent latent draws."""
    cfg = preset(robotics_multimodal.MultimodalConfig, ctx)
    res = memo.memoized(robotics_multimodal.run, cfg)
    mse, act = res.outcomes["mse"], res.outcomes["act_sampled"]
    n = cfg.num_test
    diff = mse.collision_rate - act.collision_rate
    se = math.sqrt((mse.collision_rate * (1 - mse.collision_rate)
                    + act.collision_rate * (1 - act.collision_rate)) / n)
    z = diff / se if se > 0 else (math.inf if diff > 0 else 0.0)
    a = np.asarray(act.sides)
    b = np.asarray(res.outcomes["act_resampled"].sides)
    both = (a != 0) & (b != 0)
    return {"mse_collision": mse.collision_rate, "cvae_collision": act.collision_rate,
            "zero_latent_collision": res.outcomes["act_zero"].collision_rate,
            "collision_z": z,
            "side_switches": float((a[both] != b[both]).sum()),
            "side_switch_fraction": float((a[both] != b[both]).mean()) if both.any() else 0.0,
            "cvae_left_fraction": act.left_fraction,
            "demo_left_fraction": res.demo_left_fraction}, res


@claim(
    "robotics.multimodal-actions",
    source=f"{SOURCE} (ACT's CVAE, decoding table: '多峰能力'); Zhao et al. 2023",
    statement="On a go-left-or-right obstacle task an MSE policy averages the modes and collides "
    "in most rollouts; ACT (CVAE, z sampled once per episode, L1 chunks) collides significantly "
    "less (two-proportion z >= 3), and its latent chooses the side: two independent draws of z "
    "send some starts to different sides. On every seed. (Narrowed in issue 14: at tiny the "
    "CVAE does not reproduce the demonstrations' 50/50 split, see notes.)",
    tier="full",
    falsifier="robotics.act-latent-dropped",
    expected="verified",
    version=2,
    kind="measurement",
    seed_refs=[("000", 1302, 1310), ("000", 1314, 1314)],
    audit="""Issue 31 review (P, b: threshold replaced after a failure), reported plainly, not
    re-tuned. Version 1 required the CVAE's left fraction in [0.15, 0.85] (the demonstrations
    are ~50/50); at tiny it failed on seeds 1, 2 (and 4) of 0-4 (left fraction 0.27-0.89), and
    issue 14 replaced it by '>= 1 start changes side between two independent z draws'
    (measured 3-12). That criterion has an exact null model, a decoder that ignores z changes
    no side (0), and so it decides only that the latent influences the side; it does not show
    that the CVAE reproduces the demonstrations' split, which it did not at tiny (possibly
    posterior collapse of part of the latent; not investigated). The statement says 'some
    starts' accordingly, and the failed band is kept in the notes as a failure, not as a
    passed condition. The collision z >= 3 is a sampling-error bound (one-sided p < 0.0014);
    'MSE collides in >= 0.5' is a stated majority.""",
)
def check_multimodal_actions(ctx: Context) -> Evidence:
    sweep = over_seeds(ctx, _multimodal_values)
    res = sweep.runs[0]
    margins = [
        sweep.at_least("mse_collision", 0.5, "MSE collision rate"),
        sweep.at_least("collision_z", 3.0, "z of (MSE - CVAE collision rate)"),
        sweep.at_least("side_switches", 1.0, "starts whose side changes with z"),
    ]
    names = list(sweep.values)
    return Evidence(
        predicted={"MSE collision rate": ">= 0.5 (the mean action points at the obstacle)",
                   "CVAE vs MSE collisions": "lower by >= 3 standard errors",
                   "latent": "a second z draw changes the side of some starts (a deterministic "
                   "decoder changes none)"},
        measured={n: {"mean": round(sweep.mean(n), 3), "spread": round(sweep.spread(n), 3),
                      "min": round(sweep.lo(n), 3), "max": round(sweep.hi(n), 3)}
                  for n in names},
        tolerance=f"collision: binomial standard errors of {res.config.num_test} rollouts per "
        "policy, z >= 3 (two-proportion test, one-sided p < 0.0014); side switches: >= 1 (a "
        "decoder that ignores z gives exactly 0); MSE majority collides (>= 0.5); worst of "
        f"{len(sweep.seeds)} seeds",
        verdict=decide(margins),
        notes=[msg("first seed: demonstrations going left {demo_left_fraction:.2f}; run "
                   "{seconds:.1f} s", demo_left_fraction=res.demo_left_fraction,
                   seconds=res.seconds),
               msg("ACT with z = 0 is shown for reference (not part of the verdict): L1 chunks "
                   "alone already avoid the obstacle at tiny, the latent's role is measured by the "
                   "side switches between two z draws."),
               msg("Issue 14 sweep (tiny, seeds 0-4): CVAE collision 0.10-0.26 (v1 required <= "
                   "0.2: seed 3 failed), CVAE left fraction 0.27-0.89 (v1 required [0.15, 0.85]: "
                   "seeds 1, 2 failed) although the demonstrations are ~50/50; the old thresholds "
                   "are replaced by the z-test and the side-switch count (version 2).")],
        margins=margins,
        per_seed=sweep.to_json(),
        figures=[_rollout_figure(res)],
    )
