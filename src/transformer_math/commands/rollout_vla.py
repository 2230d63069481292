"""``tmath rollout vla-push``: success rate of a VLA policy (or the scripted expert) on VLAPush.

    tmath rollout vla-push --policy scripted --episodes 20
    tmath rollout vla-push --policy my_vla/ --episodes 50 --split held_out --instruction shuffled

Runs ``--episodes`` scenes (seeds ``--seed`` .. ``--seed + episodes - 1``) in lockstep
(:func:`transformer_math.robotics.vla_training.evaluate`), prints the success rate with its 95 %
Wilson interval and saves the frames of episode 0 as a PNG strip at ``--out``. ``--split
held_out`` draws instructions naming the colour-shape pairs never named in training;
``--instruction shuffled`` gives every episode another episode's instruction. No ``register``:
``commands/rollout.py`` calls :func:`rollout_vla`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from transformer_math.commands.args import MAX_SEED, integer, json_text, output_file

MAX_EPISODES = 10_000
SPLITS = ("train", "held_out")
INSTRUCTIONS = ("true", "shuffled")
STRIP_FRAMES = 8


def rollout_vla(policy: str, seed: int, out: str, episodes: int | None, split: str | None,
                instruction: str | None, as_json: bool) -> None:
    """The ``vla-push`` branch of ``tmath rollout`` (module docstring)."""
    episodes = 50 if episodes is None else episodes
    split = "train" if split is None else split
    instruction = "true" if instruction is None else instruction
    integer("--episodes", episodes, low=1, high=MAX_EPISODES)
    integer("--seed", seed, low=0, high=MAX_SEED - MAX_EPISODES)
    if split not in SPLITS:
        raise typer.BadParameter(f"expected one of {', '.join(SPLITS)}, got {split!r}",
                                 param_hint="--split")
    if instruction not in INSTRUCTIONS:
        raise typer.BadParameter(f"expected one of {', '.join(INSTRUCTIONS)}, got "
                                 f"{instruction!r}", param_hint="--instruction")
    if not out.lower().endswith(".png"):
        raise typer.BadParameter(f"expected a .png path, got {out!r}", param_hint="--out")
    output_file("--out", out)

    from transformer_math.commands.args import internal_work
    from transformer_math.robotics.vla_training import evaluate

    model = None
    if policy != "scripted":
        path = Path(policy)
        if not (path.is_file() or path.is_dir()):
            raise typer.BadParameter(f"expected 'scripted' or an existing policy folder, got "
                                     f"{policy!r}", param_hint="--policy")
        from safetensors import SafetensorError

        from transformer_math.robotics.policies.base import load_policy
        from transformer_math.robotics.policies.vla import VLAPolicy

        try:
            model = load_policy(path)
        except (ValueError, KeyError, OSError, SafetensorError) as exc:
            raise typer.BadParameter(f"cannot load checkpoint {policy!r}: {exc}",
                                     param_hint="--policy") from exc
        if not isinstance(model, VLAPolicy):
            raise typer.BadParameter(f"vla-push needs a 'vla' policy, {policy!r} holds a "
                                     f"{getattr(model, 'kind', '?')!r} one",
                                     param_hint="--policy")
    frames: list = []
    with internal_work():
        result = evaluate(model, episodes=episodes, split=split, seed=seed,
                          instruction=instruction, frames=frames)
        _strip(frames, Path(out), f"{policy}: episode 0 ({split}, {instruction} instruction)")
    summary = {"env": "vla-push", "policy": policy, "seed": seed, **result.as_dict(),
               "png": out}
    if as_json:
        typer.echo(json_text(summary))
    else:
        lo, hi = result.interval
        typer.echo(f"vla-push ({split}, {instruction} instruction): {result.successes}/"
                   f"{result.episodes} successes = {result.rate:.3f}, 95% Wilson interval "
                   f"[{lo:.3f}, {hi:.3f}]; first grab: the named object in "
                   f"{result.grabbed_named}, another in "
                   f"{result.grabbed_any - result.grabbed_named}; strip {out}")


def _strip(frames: list, out: Path, title: str) -> None:
    """Up to :data:`STRIP_FRAMES` evenly spaced frames side by side (matplotlib, PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from transformer_math import safe_write

    picks = np.unique(np.linspace(0, len(frames) - 1, min(STRIP_FRAMES, len(frames))).round()
                      ).astype(int)
    fig, axes = plt.subplots(1, len(picks), figsize=(1.6 * len(picks), 2.0), squeeze=False)
    for ax, i in zip(axes[0], picks, strict=True):
        ax.imshow(frames[i], interpolation="nearest")
        ax.set_title(f"t={i}", fontsize=8)
        ax.axis("off")
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    safe_write.save_figure(fig, out, dpi=100)
    plt.close(fig)
