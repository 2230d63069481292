"""Bimodal obstacle task: go around a disc on the left or on the right; both are correct.

(000 §8.3.8 and CLAIMS.md ``robotics.multimodal-actions``.) A point starts near (0, 0) and must
reach the goal (0, 2) without touching the obstacle, a disc of radius 0.35 at (0, 1). Action =
velocity in [-1, 1]^2, p_{t+1} = p_t + dt a_t, dt = 0.1, horizon 40. Observation = p.

Scripted expert: draws a side s in {-1, +1} with probability 1/2 per episode (independent of the
state), heads for the waypoint (s * w, 1) with w ~ U(0.55, 0.75) until it is level with the
obstacle, then for the goal, at unit speed (slowing down inside the last step). Near the start the
two modes are equally likely, so the mean action points straight at the obstacle: a
mean-regressing (MSE) policy averages the modes and collides; a policy that samples one mode
(CVAE with sampled z, or a mixture head) does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from transformer_math.robotics.envs.validation import EpisodeOrder, box_action, check_config

GOAL = np.array([0.0, 2.0])
OBSTACLE = np.array([0.0, 1.0])


@dataclass(frozen=True)
class BimodalConfig:
    dt: float = 0.1
    horizon: int = 40
    obstacle_radius: float = 0.35
    goal_radius: float = 0.1
    start_noise: float = 0.02

    def __post_init__(self) -> None:
        check_config(self, positive=("dt", "obstacle_radius", "goal_radius"),
                     non_negative=("start_noise",), counts=("horizon",))


def collided(cfg: BimodalConfig, p: np.ndarray) -> np.ndarray:
    return np.linalg.norm(p - OBSTACLE, axis=-1) < cfg.obstacle_radius


def reached(cfg: BimodalConfig, p: np.ndarray) -> np.ndarray:
    return np.linalg.norm(p - GOAL, axis=-1) < cfg.goal_radius


def bimodal_step(cfg: BimodalConfig, p: np.ndarray, action: np.ndarray) -> np.ndarray:
    return p + cfg.dt * np.clip(action, -1.0, 1.0)


class BimodalExpert:
    """Per-episode side s = +-1 and waypoint offset w (module docstring); batched over n."""

    def __init__(self, rng: np.random.Generator, n: int) -> None:
        self.side = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        self.offset = rng.uniform(0.55, 0.75, size=n)

    def act(self, cfg: BimodalConfig, p: np.ndarray) -> np.ndarray:
        waypoint = np.stack([self.side * self.offset, np.full_like(self.side, OBSTACLE[1])], 1)
        target = np.where((p[:, 1] < OBSTACLE[1])[:, None], waypoint, GOAL[None])
        delta = target - p
        dist = np.linalg.norm(delta, axis=1, keepdims=True)
        speed = np.minimum(1.0, dist / cfg.dt)
        return (delta / np.maximum(dist, 1e-9) * speed).astype(np.float32)


def start_positions(cfg: BimodalConfig, rng: np.random.Generator, n: int) -> np.ndarray:
    return np.stack([cfg.start_noise * rng.standard_normal(n), np.zeros(n)], axis=1)


@dataclass
class BimodalDataset:
    """observations (N, T, 2), actions (N, T, 2), side (N,) of each demonstration."""

    observations: np.ndarray
    actions: np.ndarray
    side: np.ndarray


def generate_bimodal_dataset(cfg: BimodalConfig, num_episodes: int, seed: int) -> BimodalDataset:
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    rng = np.random.default_rng(seed)
    p = start_positions(cfg, rng, num_episodes)
    expert = BimodalExpert(rng, num_episodes)
    obs = np.zeros((num_episodes, cfg.horizon, 2), np.float32)
    act = np.zeros((num_episodes, cfg.horizon, 2), np.float32)
    for t in range(cfg.horizon):
        obs[:, t] = p
        act[:, t] = expert.act(cfg, p)
        p = bimodal_step(cfg, p, act[:, t])
    return BimodalDataset(obs, act, expert.side)


class BimodalObstacleEnv(gym.Env):
    """Gymnasium environment: +1 and termination at the goal, -1 and termination on collision.

    ``step`` validates the action and the call order (:mod:`...envs.validation`): a finite
    array of shape (2,) inside [-1, 1]^2, after ``reset()`` and before the end of the episode."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, config: BimodalConfig | None = None,
                 render_mode: str | None = None) -> None:
        self.cfg = config or BimodalConfig()
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-5.0, 5.0, (2,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._p = np.zeros((1, 2))
        self._t = 0
        self._trail: list[np.ndarray] = []
        self._order = EpisodeOrder("BimodalObstacleEnv")

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._p = start_positions(self.cfg, self.np_random, 1)
        self._t = 0
        self._trail = [self._p[0].copy()]
        self._order.started()
        return self._p[0].astype(np.float32), {}

    def step(self, action):
        self._order.check()
        a = box_action(action, self.action_space).reshape(1, 2)
        self._p = np.clip(bimodal_step(self.cfg, self._p, a), -5.0, 5.0)
        self._t += 1
        self._trail.append(self._p[0].copy())
        hit, goal = bool(collided(self.cfg, self._p)[0]), bool(reached(self.cfg, self._p)[0])
        reward = -1.0 if hit else (1.0 if goal else 0.0)
        info = {"collided": hit, "success": goal and not hit}
        truncated = self._t >= self.cfg.horizon
        self._order.stepped(hit or goal, truncated)
        return self._p[0].astype(np.float32), reward, hit or goal, truncated, info

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        from transformer_math.robotics.envs.drawing import Canvas

        canvas = Canvas(96, 96, (-1.25, 1.25), (-0.25, 2.25))
        canvas.disc(OBSTACLE, self.cfg.obstacle_radius, (120, 120, 120))
        canvas.disc(GOAL, self.cfg.goal_radius, (40, 170, 40))
        canvas.polyline(np.array(self._trail), (30, 90, 200))
        canvas.disc(self._p[0], 0.05, (200, 40, 40))
        return canvas.image
