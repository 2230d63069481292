"""Gymnasium environments of the robotics bridges, registered on import (ids ``TransformerMath/*``).

- ``TransformerMath/PointMassTracking-v0``: 2-D point mass following a smooth reference path
  (long horizon, OU-noisy PD expert, optional pushes).
- ``TransformerMath/BimodalObstacle-v0``: pass an obstacle on the left or on the right.
- ``TransformerMath/StitchGrid-v0``: gridworld whose datasets hold only A->B and B->C halves.
- ``TransformerMath/Runner1D-v0``: 1-D runner whose return is the distance run (DT conditioning).

Every environment validates its actions and the order of reset/step
(:mod:`transformer_math.robotics.envs.validation`).
"""

from __future__ import annotations

import gymnasium as gym

ENV_IDS = {
    "point-mass": "TransformerMath/PointMassTracking-v0",
    "bimodal": "TransformerMath/BimodalObstacle-v0",
    "grid": "TransformerMath/StitchGrid-v0",
    "runner": "TransformerMath/Runner1D-v0",
}

_ENTRY_POINTS = {
    ENV_IDS["point-mass"]: "transformer_math.robotics.envs.point_mass:PointMassTrackingEnv",
    ENV_IDS["bimodal"]: "transformer_math.robotics.envs.bimodal:BimodalObstacleEnv",
    ENV_IDS["grid"]: "transformer_math.robotics.envs.gridworld:StitchGridEnv",
    ENV_IDS["runner"]: "transformer_math.robotics.envs.runner:Runner1DEnv",
}

for _env_id, _entry in _ENTRY_POINTS.items():
    if _env_id not in gym.registry:
        gym.register(id=_env_id, entry_point=_entry)
