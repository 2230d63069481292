"""``tmath rollout``: run a scripted or trained policy in a robotics environment and plot it.

    tmath rollout point-mass --policy scripted --out traj.png
    tmath rollout bimodal --policy act_policy/ --seed 3 --json
    tmath rollout grid --policy dt.safetensors --target-return 4
    tmath rollout vla-push --policy my_vla/ --episodes 50 --split held_out
    tmath rollout aloha-transfer-cube --policy scripted --episodes 20

A checkpoint is a policy folder saved with ``policy.save_pretrained(dir)`` (LeRobot layout:
``config.json`` + ``model.safetensors``) or an older single file saved with ``policy.save(path)``;
its type and config are read from it. A trained policy's continuous actions are clipped to the
environment's action bounds before ``env.step`` (gymnasium's ``ClipAction`` convention; the
environments refuse out-of-bounds actions). Exit codes: 0 success, 2 bad usage (one-line error).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import typer

from transformer_math.commands.args import MAX_SEED, integer, json_text, number, output_file

ENV_NAMES = ("point-mass", "bimodal", "grid", "runner")
VLA_ENV = "vla-push"
"""The image-and-instruction environment (``commands/rollout_vla.py``): success rate over
``--episodes`` with a Wilson interval and a PNG strip of episode 0."""
SIM_ENVS = ("pusht", "aloha-insertion", "aloha-transfer-cube")
"""gym-pusht and gym-aloha (the ``[sim]`` extra; ``commands/rollout_sim.py``): success rate over
``--episodes`` with a Wilson interval, each episode's metric and a PNG strip of episode 0."""
ALL_ENVS = (*ENV_NAMES, VLA_ENV, *SIM_ENVS)
MAX_STEPS = 1_000_000
"""Largest ``--max-steps``."""


def _scripted(env_name: str, env: Any, seed: int):
    """A per-step scripted expert ``act(obs) -> action`` for the environment."""
    rng = np.random.default_rng(seed + 1)
    if env_name == "point-mass":
        expert = env.unwrapped.expert(rng)

        def act(obs):
            params, p, v, t = env.unwrapped.state
            return expert.act(params, t, p, v)[0].astype(np.float32)

        return act
    if env_name == "bimodal":
        from transformer_math.robotics.envs.bimodal import BimodalExpert

        expert = BimodalExpert(rng, 1)
        cfg = env.unwrapped.cfg
        return lambda obs: expert.act(cfg, np.asarray(obs, dtype=np.float64)[None])[0]
    if env_name == "grid":
        from transformer_math.robotics.envs.gridworld import scripted_episode

        moves = list(scripted_episode(rng, "A->B->C").actions)
        return lambda obs: moves.pop(0) if moves else 0
    pace = float(rng.uniform(-0.3, 0.3))
    return lambda obs: np.array([pace], np.float32)


def _trained(path: Path, target_return: float | None, action_space: Any):
    import gymnasium as gym
    import torch

    from transformer_math.robotics.policies.base import load_policy
    from transformer_math.robotics.policies.decision_transformer import DecisionTransformer

    policy = load_policy(path)
    if isinstance(policy, DecisionTransformer):
        if target_return is None:
            raise typer.BadParameter("a Decision Transformer needs --target-return",
                                     param_hint="--target-return")
        policy.reset(target_return)
    else:
        policy.reset()
    state = {"reward": 0.0, "first": True}
    box = action_space if isinstance(action_space, gym.spaces.Box) else None

    def act(obs):
        batch = {"observation.state": torch.as_tensor(obs, dtype=torch.float32)[None]}
        if isinstance(policy, DecisionTransformer) and not state["first"]:
            batch["reward"] = torch.tensor([state["reward"]])
        state["first"] = False
        out = policy.select_action(batch)[0]
        if out.dim() == 0:
            return int(out)
        action = out.detach().cpu().numpy()
        if box is not None:  # ClipAction: a trained policy may overshoot the bounds
            action = np.clip(action, box.low, box.high).astype(box.dtype)
        return action

    return act, state


def _plot(env_name: str, env: Any, trail: np.ndarray, rewards: list[float], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    u = env.unwrapped
    if env_name == "point-mass":
        ref = u.reference_path()
        ax.plot(ref[:, 0], ref[:, 1], "k--", lw=1, label="reference")
        ax.plot(trail[:, 0], trail[:, 1], "b-", lw=1.2, label="policy")
    elif env_name == "bimodal":
        from transformer_math.robotics.envs.bimodal import GOAL, OBSTACLE

        ax.add_patch(plt.Circle(OBSTACLE, u.cfg.obstacle_radius, color="0.6"))
        ax.add_patch(plt.Circle(GOAL, u.cfg.goal_radius, color="g"))
        ax.plot(trail[:, 0], trail[:, 1], "b.-", label="policy")
        ax.set_aspect("equal")
    elif env_name == "grid":
        from transformer_math.robotics.envs.gridworld import CELLS, SIZE

        for name, (x, y) in CELLS.items():
            ax.text(x, y, name, ha="center", va="center", fontsize=14, color="purple")
        ax.plot(trail[:, 0], trail[:, 1], "b.-", label="policy")
        ax.set_xlim(-0.5, SIZE - 0.5)
        ax.set_ylim(-0.5, SIZE - 0.5)
        ax.grid(True)
    else:
        ax.plot(np.arange(len(trail)), trail[:, 0], "b-", label="position")
        ax.set_xlabel("step")
    ax.set_title(f"{env_name}: return {sum(rewards):.3f}")
    ax.legend(loc="best")
    fig.tight_layout()
    from transformer_math import safe_write

    safe_write.save_figure(fig, out, dpi=100)
    plt.close(fig)


def rollout(
    env_name: str = typer.Argument(..., help=f"one of {', '.join(ALL_ENVS)}"),
    policy: str = typer.Option("scripted", help="'scripted', a policy folder (save_pretrained) "
                               "or a .safetensors policy file"),
    seed: int = typer.Option(0, help="environment seed"),
    out: str = typer.Option("rollout.png", help="trajectory plot (PNG)"),
    target_return: float | None = typer.Option(None, help="Decision Transformer target return"),
    max_steps: int = typer.Option(1000, min=1, help="stop after this many steps"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    episodes: int | None = typer.Option(None, help="vla-push, pusht, aloha-*: episodes to run "
                                        "(default 50 for vla-push, 10 for the simulators)"),
    split: str | None = typer.Option(None, help="vla-push: 'train' or 'held_out' instructions"),
    instruction: str | None = typer.Option(None, help="vla-push: 'true' or 'shuffled'"),
) -> None:
    """Run a scripted or trained policy in an environment and save a trajectory plot."""
    if env_name == VLA_ENV:
        from transformer_math.commands.rollout_vla import rollout_vla

        rollout_vla(policy, seed, out, episodes, split, instruction, as_json)
        return
    if env_name in SIM_ENVS:
        for option, given in (("--split", split), ("--instruction", instruction),
                              ("--target-return", target_return)):
            if given is not None:
                raise typer.BadParameter(f"{option} is not for {env_name}", param_hint=option)
        from transformer_math.commands.rollout_sim import rollout_sim

        rollout_sim(env_name, policy, seed, out, episodes, max_steps, as_json)
        return
    if env_name not in ENV_NAMES:
        raise typer.BadParameter(f"expected one of {', '.join(ALL_ENVS)}, got "
                                 f"{env_name!r}", param_hint="ENV_NAME")
    for option, given in (("--episodes", episodes), ("--split", split),
                          ("--instruction", instruction)):
        if given is not None:
            raise typer.BadParameter(f"{option} is for {VLA_ENV} and the simulators only",
                                     param_hint=option)
    if not out.lower().endswith(".png"):
        raise typer.BadParameter(f"expected a .png path, got {out!r}", param_hint="--out")
    integer("--seed", seed, low=0, high=MAX_SEED)
    integer("--max-steps", max_steps, low=1, high=MAX_STEPS)
    number("--target-return", target_return)
    output_file("--out", out)  # before the rollout runs, not after

    import gymnasium as gym

    from transformer_math.robotics.envs import ENV_IDS

    env = gym.make(ENV_IDS[env_name])
    out_path = Path(out)
    obs, _ = env.reset(seed=seed)
    dt_state: dict[str, Any] | None = None
    if policy == "scripted":
        act = _scripted(env_name, env, seed)
    else:
        path = Path(policy)
        if not (path.is_file() or path.is_dir()):
            raise typer.BadParameter(f"expected 'scripted' or an existing checkpoint, got "
                                     f"{policy!r}", param_hint="--policy")
        from safetensors import SafetensorError

        try:
            act, dt_state = _trained(path, target_return, env.action_space)
        except (ValueError, KeyError, OSError, SafetensorError) as exc:  # not a policy file
            raise typer.BadParameter(f"cannot load checkpoint {policy!r}: {exc}",
                                     param_hint="--policy") from exc
    u = env.unwrapped

    def position() -> np.ndarray:
        if env_name == "point-mass":
            return u.state[1][0].copy()
        if env_name == "grid":
            return np.array(u.cell, float)
        return np.asarray(obs, float)[:2].copy() if env_name == "bimodal" else np.array(
            [float(obs[0]) * u.cfg.horizon])

    trail, rewards, end_info = [position()], [], {}
    try:
        for _ in range(max_steps):
            obs, reward, terminated, truncated, end_info = env.step(act(obs))
            rewards.append(float(reward))
            if dt_state is not None:
                dt_state["reward"] = float(reward)
            trail.append(position())
            if terminated or truncated:
                break
    except ValueError as exc:
        raise typer.BadParameter(f"policy does not fit environment {env_name!r}: {exc}",
                                 param_hint="--policy") from exc
    _plot(env_name, env, np.array(trail), rewards, out_path)
    summary = {"env": env_name, "policy": policy, "seed": seed, "steps": len(rewards),
               "return": round(sum(rewards), 4), "png": str(out),
               "info": {k: (v if isinstance(v, bool | int | float | str) else str(v))
                        for k, v in end_info.items()}}
    if as_json:
        typer.echo(json_text(summary))
    else:
        typer.echo(f"{env_name}: {summary['steps']} steps, return {summary['return']}, "
                   f"plot {out}")


def register(app: typer.Typer) -> None:
    """Add ``rollout`` to the ``tmath`` application."""
    app.command("rollout")(rollout)
