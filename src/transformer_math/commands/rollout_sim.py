"""``tmath rollout pusht|aloha-insertion|aloha-transfer-cube``: the community's simulators.

    tmath rollout aloha-transfer-cube --policy scripted --episodes 20
    tmath rollout aloha-transfer-cube --policy my_act/ --episodes 50 --out cube.png
    tmath rollout pusht --policy my_pusht_act/ --episodes 10 --json

Runs ``--episodes`` episodes (reset seeds ``--seed`` .. ``--seed + episodes - 1``) of gym-pusht
or gym-aloha (the ``[sim]`` extra) with LeRobot's observation keys and episode lengths
(:mod:`transformer_math.robotics.sim.community`), prints the success rate with its 95 % Wilson
interval and each episode's metric (PushT: maximum coverage, success above 0.95; ALOHA:
maximum reward, success at 4), and saves frames of episode 0 as a PNG strip at ``--out``. A
policy with cameras sees the benchmark's images (``pixels_agent_pos``); a state-only one the
``environment_state_agent_pos`` observation. ``--policy scripted`` is the scripted expert of
``aloha-transfer-cube`` (:mod:`transformer_math.robotics.sim.aloha_scripted`); the other two
have none. ``--max-steps`` below the episode length cuts episodes short. No ``register``:
``commands/rollout.py`` calls :func:`rollout_sim`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from transformer_math.commands.args import MAX_SEED, integer, json_text, output_file

MAX_EPISODES = 10_000
DEFAULT_EPISODES = 10
STRIP_FRAMES = 8


def rollout_sim(env_name: str, policy: str, seed: int, out: str, episodes: int | None,
                max_steps: int, as_json: bool) -> None:
    """The simulator branch of ``tmath rollout`` (module docstring)."""
    episodes = DEFAULT_EPISODES if episodes is None else episodes
    integer("--episodes", episodes, low=1, high=MAX_EPISODES)
    integer("--seed", seed, low=0, high=MAX_SEED - MAX_EPISODES)
    integer("--max-steps", max_steps, low=1, high=1_000_000)
    if not out.lower().endswith(".png"):
        raise typer.BadParameter(f"expected a .png path, got {out!r}", param_hint="--out")
    output_file("--out", out)

    from transformer_math.robotics.sim import community

    try:
        spec = community.require(env_name)
    except community.SimUnavailableError as exc:
        raise typer.BadParameter(str(exc), param_hint="ENV_NAME") from exc
    make_actor: Any
    if policy == "scripted":
        if env_name != "aloha-transfer-cube":
            raise typer.BadParameter(f"{env_name} has no scripted expert here (only "
                                     "aloha-transfer-cube has); pass a policy folder",
                                     param_hint="--policy")
        from transformer_math.robotics.sim.aloha_scripted import scripted_actor

        make_actor, obs_type = scripted_actor, "environment_state_agent_pos"
    else:
        model = _load(policy)
        obs_type = ("pixels_agent_pos" if getattr(model.config, "camera_names", ())
                    else "environment_state_agent_pos")
        _check_fits(env_name, model, obs_type, policy)
        make_actor = community.policy_actor(model)
    frames: list = []
    from transformer_math.commands.args import internal_work

    with internal_work():
        result = community.run_episodes(
            env_name, make_actor, episodes=episodes, seed=seed, obs_type=obs_type,
            frames=frames, max_steps=max_steps if max_steps < spec.episode_length else None)
        _strip(frames, Path(out), f"{env_name}, {policy}: episode 0 (seed {seed})")
    summary = {"policy": policy, "seed": seed, "obs_type": obs_type, **result.as_dict(),
               "png": out}
    if as_json:
        typer.echo(json_text(summary))
        return
    lo, hi = result.interval
    metric = ", ".join(f"{m:.3g}" for m in result.metrics)
    typer.echo(f"{env_name}: {result.successes}/{result.episodes} successes = "
               f"{result.rate:.3f}, 95% Wilson interval [{lo:.3f}, {hi:.3f}]; "
               f"{result.metric_name} per episode: {metric}; strip {out}")


def _strip(frames: list, out: Path, title: str) -> None:
    """Up to :data:`STRIP_FRAMES` evenly spaced (step, frame) pairs side by side (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from transformer_math import safe_write

    picks = np.unique(np.linspace(0, len(frames) - 1, min(STRIP_FRAMES, len(frames))).round()
                      ).astype(int)
    fig, axes = plt.subplots(1, len(picks), figsize=(1.8 * len(picks), 2.0), squeeze=False)
    for ax, i in zip(axes[0], picks, strict=True):
        step, frame = frames[i]
        ax.imshow(frame, interpolation="nearest")
        ax.set_title(f"step {step}", fontsize=8)
        ax.axis("off")
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    safe_write.save_figure(fig, out, dpi=100)
    plt.close(fig)


def _load(policy: str) -> Any:
    path = Path(policy)
    if not (path.is_file() or path.is_dir()):
        raise typer.BadParameter(f"expected 'scripted' or an existing policy folder, got "
                                 f"{policy!r}", param_hint="--policy")
    from safetensors import SafetensorError

    from transformer_math.robotics.policies.base import load_policy

    try:
        model = load_policy(path)
    except (ValueError, KeyError, OSError, SafetensorError) as exc:
        raise typer.BadParameter(f"cannot load checkpoint {policy!r}: {exc}",
                                 param_hint="--policy") from exc
    if not hasattr(getattr(model, "config", None), "state_dim") or not hasattr(
            model, "select_action"):
        raise typer.BadParameter(f"{policy!r} holds a {getattr(model, 'kind', '?')!r} policy; "
                                 "the simulators take a chunk policy with a state_dim (ACT)",
                                 param_hint="--policy")
    model.eval()
    return model


def _check_fits(env_name: str, model: Any, obs_type: str, policy: str) -> None:
    """Refuse, before any episode, a policy whose state size or cameras do not fit."""
    from transformer_math.robotics.sim import community

    env = community.make_env(env_name, obs_type)
    try:
        obs, _ = env.reset(seed=0)
        batch = community.policy_batch(community.lerobot_observation(obs), model)
        action_dim = int(getattr(model.config, "action_dim", env.action_space.shape[0]))
        if action_dim != env.action_space.shape[0]:
            raise ValueError(f"the policy's action_dim is {action_dim}, {env_name} takes "
                             f"{env.action_space.shape[0]}")
        for key, img in batch.items():
            if key.startswith(community.IMAGES_PREFIX):
                want = (model.config.image_channels, model.config.image_height,
                        model.config.image_width)
                if tuple(img.shape[1:]) != want:
                    raise ValueError(f"camera {key} gives images {tuple(img.shape[1:])}, the "
                                     f"policy reads {want}")
    except ValueError as exc:
        raise typer.BadParameter(f"policy {policy!r} does not fit {env_name}: {exc}",
                                 param_hint="--policy") from exc
    finally:
        env.close()
