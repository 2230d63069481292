"""Gymnasium environments of the robotics bridges (ids ``TransformerMath/*``).

- ``TransformerMath/PointMassTracking-v0``: 2-D point mass following a smooth reference path
  (long horizon, OU-noisy PD expert, optional pushes).
- ``TransformerMath/BimodalObstacle-v0``: pass an obstacle on the left or on the right.
- ``TransformerMath/StitchGrid-v0``: gridworld whose datasets hold only A->B and B->C halves.
- ``TransformerMath/Runner1D-v0``: 1-D runner whose return is the distance run (DT conditioning).
- ``TransformerMath/VLAPush-v0``: rendered tabletop, an instruction names which object goes where
  (dict observations ``pixels`` + ``agent_pos``, the instruction in ``info["task"]``); in
  :data:`VISION_ENV_IDS`, not :data:`ENV_IDS` (the four state-vector environments).

Every environment validates its actions and the order of reset/step
(:mod:`transformer_math.robotics.envs.validation`).

Registration: :func:`register_envs` (idempotent) registers all four with gymnasium, each with
``max_episode_steps`` = its default horizon (the env truncates there itself too; pass
``max_episode_steps=`` to ``gymnasium.make`` with a config of another horizon). It runs when this
module is imported, and it is the package's ``gymnasium.envs`` entry point (pyproject.toml), the
plugin hook of gymnasium 0.26-0.29. gymnasium 1.x dropped plugin loading: there a fresh
interpreter names the module in the id, ``gymnasium.make("transformer_math.robotics.envs:
TransformerMath/PointMassTracking-v0")`` (gymnasium imports it), or imports this module first.
"""

from __future__ import annotations

ENV_IDS = {
    "point-mass": "TransformerMath/PointMassTracking-v0",
    "bimodal": "TransformerMath/BimodalObstacle-v0",
    "grid": "TransformerMath/StitchGrid-v0",
    "runner": "TransformerMath/Runner1D-v0",
}

VISION_ENV_IDS = {
    "vla-push": "TransformerMath/VLAPush-v0",
}
"""Environments with image observations (dict spaces), registered with the others."""

ENV_SPECS: dict[str, tuple[str, int]] = {
    ENV_IDS["point-mass"]: ("transformer_math.robotics.envs.point_mass:PointMassTrackingEnv", 400),
    ENV_IDS["bimodal"]: ("transformer_math.robotics.envs.bimodal:BimodalObstacleEnv", 40),
    ENV_IDS["grid"]: ("transformer_math.robotics.envs.gridworld:StitchGridEnv", 14),
    ENV_IDS["runner"]: ("transformer_math.robotics.envs.runner:Runner1DEnv", 40),
    VISION_ENV_IDS["vla-push"]: ("transformer_math.robotics.envs.vla_push:VLAPushEnv", 32),
}
"""id -> (entry point, max_episode_steps = the default horizon; a test checks it against each
env's config), static so that registering imports no environment module."""


def register_envs() -> None:
    """Register every environment of :data:`ENV_SPECS` with gymnasium (no-op for ids already
    registered)."""
    from gymnasium.envs.registration import register, registry

    for env_id, (entry, steps) in ENV_SPECS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry, max_episode_steps=steps)


register_envs()
