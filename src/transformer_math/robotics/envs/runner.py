"""1-D runner: the return is the distance run, so any return in [-T, T] is reachable.

(000 §8.3.8 "return-conditioning 的可达性陷阱"; CLAIMS.md ``robotics.dt-return-reachability``.)
State x, action a in [-1, 1], x_{t+1} = x_t + a_t, reward r_t = a_t, horizon T = 40, so the
return is x_T - x_0 and the best possible return is T. Observation = (x / T, t / T).

Behaviour data: each episode runs at its own pace c ~ U(-c_max, c_max) (c_max = 0.3) with
per-step noise N(0, 0.05^2), so the data's returns fill about [-0.3 T, 0.3 T] = [-12, 12] and
never come near the optimum 40. A return-conditioned imitator should hit targets inside that
range and stop improving above it although higher returns are physically reachable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from transformer_math.robotics.envs.validation import EpisodeOrder, box_action, check_config


@dataclass(frozen=True)
class RunnerConfig:
    horizon: int = 40
    max_pace: float = 0.3
    pace_noise: float = 0.05

    def __post_init__(self) -> None:
        check_config(self, positive=("max_pace",), non_negative=("pace_noise",),
                     counts=("horizon",))
        if self.max_pace > 1:
            raise ValueError(f"RunnerConfig.max_pace must be in (0, 1], got {self.max_pace!r}")


@dataclass
class RunnerDataset:
    """observations (N, T, 2), actions (N, T, 1), rewards (N, T)."""

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray


def runner_observation(cfg: RunnerConfig, x: np.ndarray, t: int) -> np.ndarray:
    return np.stack([x / cfg.horizon, np.full_like(x, t / cfg.horizon)], -1).astype(np.float32)


def generate_runner_dataset(cfg: RunnerConfig, num_episodes: int, seed: int) -> RunnerDataset:
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    rng = np.random.default_rng(seed)
    pace = rng.uniform(-cfg.max_pace, cfg.max_pace, size=num_episodes)
    x = np.zeros(num_episodes)
    obs = np.zeros((num_episodes, cfg.horizon, 2), np.float32)
    act = np.zeros((num_episodes, cfg.horizon, 1), np.float32)
    for t in range(cfg.horizon):
        obs[:, t] = runner_observation(cfg, x, t)
        a = np.clip(pace + cfg.pace_noise * rng.standard_normal(num_episodes), -1.0, 1.0)
        act[:, t, 0] = a
        x = x + a
    return RunnerDataset(obs, act, act[..., 0].copy())


class Runner1DEnv(gym.Env):
    """Gymnasium environment of the runner (module docstring). ``step`` validates the action
    (a finite array of shape (1,) in [-1, 1]) and the call order (:mod:`...envs.validation`)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, config: RunnerConfig | None = None,
                 render_mode: str | None = None) -> None:
        self.cfg = config or RunnerConfig()
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self._x, self._t = 0.0, 0
        self._order = EpisodeOrder("Runner1DEnv")

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._x, self._t = 0.0, 0
        self._order.started()
        return runner_observation(self.cfg, np.array([self._x]), 0)[0], {}

    def step(self, action):
        self._order.check()
        a = float(np.clip(box_action(action, self.action_space)[0], -1.0, 1.0))
        self._x += a
        self._t += 1
        obs = runner_observation(self.cfg, np.array([self._x]), self._t)[0]
        truncated = self._t >= self.cfg.horizon
        self._order.stepped(False, truncated)
        return obs, a, False, truncated, {"x": self._x}

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        img = np.full((16, 81, 3), 255, np.uint8)
        col = int(np.clip(round(40 + self._x), 0, 80))
        img[4:12, col] = (200, 40, 40)
        img[:, 40] = (150, 150, 150)
        return img
