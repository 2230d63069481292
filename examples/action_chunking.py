"""Action chunking and compounding error (000 §8.3.8 理论 B, 000:1245-1265; Ross & Bagnell 2010;
Zhao et al. 2023, ACT).

Closed form (``theory.compounding_error``): behaviour cloning with per-step error eps pays up
to T^2 eps over T steps; the seed's chunked bound is T^2 eps / k (000:1259; T = 400, eps = 0.01:
1600 at k = 1, ~18 at k = 90). ``worst_case_expected_cost`` computes the worst-case model behind
it exactly (the learner leaves the expert's states at its first wrong decision and pays 1 at
every later step): decisions happen every k steps, and a decision errs with probability eps
(a chunk no likelier to be wrong than one action) or 1 - (1 - eps)^k (each open-loop step may
err). Chunking helps in the first case and not in the second: whether it helps is a property
of the task. Note T^2 eps = 1600 exceeds the largest possible cost T = 400.

Measured (unless ``--closed-form-only``): the point-mass tracking task of
``experiments.robotics_compounding`` (its tiny preset: 50 noisy expert demonstrations, one
chunk-BC MLP per k, open-loop chunks, 100 fresh reference paths, horizon 200): mean tracking
error per k, its growth over the episode (first vs last quarter) and the success rate (error
< 0.2 m throughout). The expert's demonstrations carry correlated (OU) noise that the policies
average out, so a policy can track better than its expert. The default 1500 training steps per
policy take ~10-15 s on one core.

    python examples/action_chunking.py [--steps 1500] [--seed 0] [--closed-form-only] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import torch

from transformer_math.experiments.robotics_compounding import CompoundingConfig, run_chunk_sweep
from transformer_math.theory.compounding_error import (
    seed_chunked_bound,
    substituted_bound,
    worst_case_expected_cost,
)


def closed_form(horizon: int = 400, eps: float = 0.01) -> None:
    print(f"closed form, T = {horizon}, eps = {eps} (largest possible cost: T = {horizon})")
    print("   k | seed T^2 eps / k | (T/k)^2 eps | worst case: chunk errs w.p. eps  "
          "| w.p. 1-(1-eps)^k")
    for k in (1, 2, 4, 8, 16, 32, 90):
        print(f"{k:4d} | {seed_chunked_bound(horizon, eps, k):16.1f} | "
              f"{substituted_bound(horizon, eps, k):11.3f} | "
              f"{worst_case_expected_cost(horizon, eps, k):31.1f}  | "
              f"{worst_case_expected_cost(horizon, eps, k, per_step_error=True):16.1f}")


def point_mass(steps: int, seed: int, quick: bool) -> None:
    cfg = dataclasses.replace(CompoundingConfig.tiny(seed), train_steps=steps,
                              modes=("open_loop",))
    if quick:  # a smoke run: 10 demonstrations, 20 test paths of 100 steps
        cfg = dataclasses.replace(cfg, num_demos=10, num_test_paths=20, horizon=100,
                                  horizons=(50, 100))
    result = run_chunk_sweep(cfg)
    q = cfg.horizon // 4
    print(f"\npoint-mass task: {cfg.num_demos} demos, {steps} training steps per policy, "
          f"{cfg.num_test_paths} test paths, horizon {cfg.horizon} "
          f"(trained in {result.train_seconds:.1f} s)")
    print("   policy | mean error (m) | first quarter | last quarter | success")
    rows = [("expert", result.expert)] + [(f"k = {r.chunk_size}", r) for r in result.runs]
    for name, run in rows:
        curve = np.asarray(run.error_curve)
        print(f"{name:>9} | {run.mean_error:14.4f} | {curve[:q].mean():13.4f} | "
              f"{curve[-q:].mean():12.4f} | {run.success[cfg.horizon]:7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500, help="training steps per policy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--closed-form-only", action="store_true")
    parser.add_argument("--quick", action="store_true", help="a smaller task (a smoke run)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # tiny MLPs: a second thread costs more than it saves
    closed_form()
    if not args.closed_form_only:
        point_mass(args.steps, args.seed, args.quick)


if __name__ == "__main__":
    main()
