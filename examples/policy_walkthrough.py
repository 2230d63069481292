"""A robot policy from demonstrations to a plotted rollout, the way a user would do it:
record demonstrations with a scripted expert, train an ACT policy (a CVAE over action chunks on
the project's Transformer, 000 §8.3.8; Zhao et al. 2023), save it, load it in a fresh process,
roll it out on a path it never saw, and plot the trajectory.

    python examples/policy_walkthrough.py                     # everything, into walkthrough/
    python examples/policy_walkthrough.py --out my_run --steps 600 --episodes 40

The task is ``TransformerMath/PointMassTracking-v0``: a point mass (double integrator,
acceleration bounded by 4 m/s^2) follows a random smooth path; the observation holds position,
velocity and the next waypoints, the reward is minus the tracking error. The expert is the
environment's PD tracker with Ornstein-Uhlenbeck action noise. Stages:

1. ``record``: ``--episodes`` expert episodes of ``--horizon`` steps (observations, actions);
2. ``train``: ``ACTPolicy`` (width 32, one encoder and one decoder layer, chunks of 10)
   trained ``--steps`` AdamW steps on mini-batches of chunks (``robotics.training``);
3. ``save``: ``policy.save_pretrained(out/policy)`` (``config.json`` + ``model.safetensors``);
4. ``rollout``: this script runs itself again (a new python process) with ``rollout``: it
   loads the folder with ``load_policy``, runs the policy, the expert and a zero-action
   baseline on an unseen path, prints their mean tracking errors and writes ``rollout.png``
   (written atomically). It exits 1 unless the policy tracks better than the zero action.

Every random draw comes from a seed (``--seed``): numpy generators for the paths and the
expert's noise, a ``torch.Generator`` for the weights and the mini-batches.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ENV_ID = "TransformerMath/PointMassTracking-v0"


def make_env(horizon: int):
    import gymnasium as gym

    import transformer_math.robotics.envs  # noqa: F401  (registers the TransformerMath envs)

    return gym.make(ENV_ID, horizon=horizon)


def record(episodes: int, horizon: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Expert demonstrations: observations (N, T, 30) and actions (N, T, 2)."""
    env = make_env(horizon)
    observations, actions = [], []
    for i in range(episodes):
        obs, _ = env.reset(seed=seed + i)
        expert = env.unwrapped.expert(np.random.default_rng(seed + 10_000 + i))
        ep_obs, ep_act = [], []
        for _ in range(horizon):
            params, p, v, t = env.unwrapped.state
            action = expert.act(params, t, p, v)[0].astype(np.float32)
            ep_obs.append(obs)
            ep_act.append(action)
            obs, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
        observations.append(np.stack(ep_obs))
        actions.append(np.stack(ep_act))
    return np.stack(observations), np.stack(actions)


def train(observations: np.ndarray, actions: np.ndarray, steps: int, seed: int):
    """An ACT policy trained on the demonstrations; returns (policy, losses)."""
    import torch

    from transformer_math.robotics.policies.act import ACTConfig, ACTPolicy
    from transformer_math.robotics.training import build_seeded, chunk_sampler, train_policy

    config = ACTConfig(state_dim=observations.shape[-1], action_dim=actions.shape[-1],
                       chunk_size=10, dim=32, num_heads=4, encoder_layers=1, decoder_layers=1,
                       latent_dim=8, seed=seed)
    policy = build_seeded(lambda: ACTPolicy(config), seed)
    policy.fit_normalization(observations, actions)
    obs_t = torch.as_tensor(observations, dtype=torch.float32)
    act_t = torch.as_tensor(actions, dtype=torch.float32)
    sampler = chunk_sampler(obs_t, act_t, config.chunk_size, batch_size=64)
    losses = train_policy(policy, sampler, steps=steps, lr=1e-3,
                          generator=torch.Generator().manual_seed(seed))
    return policy, losses


def _episode(env, seed: int, choose) -> tuple[np.ndarray, float]:
    """One episode on the path of ``seed``: the trail (T + 1, 2) and the mean tracking error."""
    obs, _ = env.reset(seed=seed)
    trail, errors = [env.unwrapped.state[1][0].copy()], []
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(choose(obs))
        trail.append(env.unwrapped.state[1][0].copy())  # the position p after the step
        errors.append(info["tracking_error"])
        done = terminated or truncated
    return np.array(trail), float(np.mean(errors))


def rollout(policy_dir: Path, horizon: int, seed: int, out: Path) -> int:
    """Load the saved policy (this is a fresh process), roll it out, plot, report; exit code."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import torch

    from transformer_math import safe_write
    from transformer_math.robotics.policies.base import load_policy

    policy = load_policy(policy_dir)
    env = make_env(horizon)
    box = env.action_space
    test_seed = seed + 50_000  # a path none of the demonstrations followed

    def act_policy(obs: np.ndarray) -> np.ndarray:
        batch = {"observation.state": torch.as_tensor(obs, dtype=torch.float32)[None]}
        with torch.no_grad():
            action = policy.select_action(batch)[0].numpy()
        return np.clip(action, box.low, box.high).astype(np.float32)  # gymnasium's ClipAction

    policy.reset()
    trail, policy_error = _episode(env, test_seed, act_policy)
    reference = env.unwrapped.reference_path()
    expert = env.unwrapped.expert(np.random.default_rng(test_seed + 1))

    def act_expert(obs: np.ndarray) -> np.ndarray:
        params, p, v, t = env.unwrapped.state
        return expert.act(params, t, p, v)[0].astype(np.float32)

    expert_trail, expert_error = _episode(env, test_seed, act_expert)
    _, zero_error = _episode(env, test_seed, lambda obs: np.zeros(2, np.float32))

    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot(reference[:, 0], reference[:, 1], "k--", lw=1, label="reference path")
    ax.plot(expert_trail[:, 0], expert_trail[:, 1], "g-", lw=1, alpha=0.7, label="expert")
    ax.plot(trail[:, 0], trail[:, 1], "b-", lw=1.4, label="ACT policy (loaded)")
    ax.set_aspect("equal")
    ax.set_title(f"point mass, unseen path: mean error {policy_error:.3f} m")
    ax.legend(loc="best", fontsize=8)
    safe_write.save_figure(fig, out, dpi=100)
    plt.close(fig)
    report = {"policy": policy_error, "expert": expert_error, "zero_action": zero_error}
    print("mean tracking error (m): " + ", ".join(f"{k} {v:.4f}" for k, v in report.items()))
    print(f"wrote {out}")
    print(json.dumps(report))
    if policy_error >= zero_error:
        print("MISMATCH: the trained policy tracks no better than doing nothing")
        return 1
    print("OK: the loaded policy tracks the unseen path")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", nargs="?", default="all", choices=["all", "rollout"],
                        help="all (record, train, save, then rollout in a new process) or "
                             "rollout (load --out/policy and roll it out)")
    parser.add_argument("--out", type=Path, default=Path("walkthrough"))
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--horizon", type=int, default=100)
    parser.add_argument("--steps", type=int, default=400, help="training steps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name in ("episodes", "horizon", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.horizon < 10:
        parser.error(f"--horizon must be >= 10 (one action chunk), got {args.horizon}")
    policy_dir = args.out / "policy"
    if args.stage == "rollout":
        return rollout(policy_dir, args.horizon, args.seed, args.out / "rollout.png")

    observations, actions = record(args.episodes, args.horizon, args.seed)
    print(f"recorded {observations.shape[0]} expert episodes of {observations.shape[1]} steps "
          f"(observations {observations.shape[-1]}-d, actions {actions.shape[-1]}-d)")
    policy, losses = train(observations, actions, args.steps, args.seed)
    print(f"trained ACT for {len(losses)} steps: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    policy.save_pretrained(policy_dir)
    print(f"saved {policy_dir} ({', '.join(sorted(p.name for p in policy_dir.iterdir()))})")
    # a fresh python process loads the folder: nothing of this process's state is reused
    done = subprocess.run([sys.executable, __file__, "rollout", "--out", str(args.out),
                           "--horizon", str(args.horizon), "--seed", str(args.seed)], check=False)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
