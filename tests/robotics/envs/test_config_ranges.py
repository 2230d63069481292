"""Environment configs refuse, in one line naming the field, every value that would make the
simulation NaN or meaningless (issue 39.4): NaN, infinities, negative noise, bool or fractional
counts; through the dataclass and through ``gymnasium.make`` overrides alike."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

import transformer_math.robotics.envs  # noqa: F401  (registers the environments)
from transformer_math.robotics.envs.bimodal import BimodalConfig
from transformer_math.robotics.envs.point_mass import PointMassConfig
from transformer_math.robotics.envs.runner import RunnerConfig

HOSTILE = [
    (PointMassConfig, "noise_std", math.nan), (PointMassConfig, "noise_std", -0.1),
    (PointMassConfig, "kp", math.inf), (PointMassConfig, "push_speed", math.nan),
    (PointMassConfig, "dt", -math.inf), (PointMassConfig, "push_prob", math.nan),
    (PointMassConfig, "horizon", True), (PointMassConfig, "horizon", 2.5),
    (PointMassConfig, "horizon", 0), (PointMassConfig, "kd", "4"),
    (BimodalConfig, "start_noise", math.nan), (BimodalConfig, "start_noise", -1.0),
    (BimodalConfig, "dt", math.inf), (BimodalConfig, "horizon", 0),
    (RunnerConfig, "pace_noise", math.nan), (RunnerConfig, "max_pace", 2.0),
    (RunnerConfig, "max_pace", math.nan), (RunnerConfig, "horizon", False),
]


@pytest.mark.parametrize(("config", "field", "value"), HOSTILE,
                         ids=[f"{c.__name__}.{f}={v!r}" for c, f, v in HOSTILE])
def test_hostile_config_values_are_refused_naming_the_field(config, field, value) -> None:
    with pytest.raises(ValueError, match=field) as info:
        config(**{field: value})
    assert "\n" not in str(info.value)


def test_defaults_still_build() -> None:
    PointMassConfig(), BimodalConfig(), RunnerConfig()


def test_gymnasium_overrides_are_checked_too() -> None:
    with pytest.raises(ValueError, match="noise_std"):
        gym.make("TransformerMath/PointMassTracking-v0", noise_std=math.nan)
    with pytest.raises(ValueError, match="max_episode_steps"):
        gym.make("TransformerMath/BimodalObstacle-v0", max_episode_steps=0)
