"""Point-mass tracking: a long-horizon task where behaviour cloning compounds its errors.

Task (000 §8.3.8 "复合误差"; sizing from FACTS.md "Chunking and compounding error"). A 2-D point
mass with position p and velocity v follows a smooth random reference path p_ref(t):

    v_{t+1} = v_t + dt * a_t,    p_{t+1} = p_t + dt * v_{t+1}     (semi-implicit Euler),

dt = 0.05 s, horizon T = 400 steps (20 s), action a_t = acceleration clipped to [-a_max, a_max].
Each reference axis is a sum of three sinusoids with random amplitude, frequency and phase, so
p_ref, v_ref and a_ref are known in closed form. Observation = (p, v, the reference at offsets
0, s, 2s, ..., 12s steps relative to p), i.e. 2 + 2 + 13 * 2 = 30 numbers.

Scripted expert: PD tracking plus feed-forward,
    a_t = a_ref(t) + k_p (p_ref(t) - p_t) + k_d (v_ref(t) - v_t) + n_t,
with temporally correlated Ornstein-Uhlenbeck noise n (correlation time tau = 1 s, stationary
std sigma = 0.3): n_{t+1} = rho n_t + sigma sqrt(1 - rho^2) xi_t, rho = exp(-dt / tau). The
correlated noise is what a single-step cloner cannot separate from the state ("copycat").

Disturbances ("pushes"): with probability ``push_prob`` per step the velocity receives an impulse
of size ``push_speed`` in a uniformly random direction (in demonstrations and at test time).

Success = tracking error |p - p_ref| below ``success_radius`` (0.2 m) at every step.

The dynamics, the reference and the observation are batched numpy functions shared by the
gymnasium environment (batch 1) and the vectorised rollouts of the experiments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from transformer_math.robotics.envs.validation import EpisodeOrder, box_action, check_config

NUM_WAYPOINTS = 13
NUM_SINES = 3


@dataclass(frozen=True)
class PointMassConfig:
    """Physical and task constants of the point-mass tracking task."""

    dt: float = 0.05
    horizon: int = 400
    max_accel: float = 4.0
    waypoint_stride: int = 2
    success_radius: float = 0.2
    push_prob: float = 0.0
    push_speed: float = 0.5
    kp: float = 4.0
    kd: float = 4.0
    noise_std: float = 0.3
    noise_tau: float = 1.0

    def __post_init__(self) -> None:
        check_config(self, positive=("dt", "max_accel", "success_radius", "noise_tau"),
                     non_negative=("push_speed", "kp", "kd", "noise_std"), unit=("push_prob",),
                     counts=("horizon", "waypoint_stride"))

    @property
    def obs_dim(self) -> int:
        return 4 + 2 * NUM_WAYPOINTS


def sample_paths(rng: np.random.Generator, n: int) -> np.ndarray:
    """Reference-path parameters, shape (n, 2 axes, NUM_SINES, 3) = (amplitude, omega, phase)."""
    amp = rng.uniform(0.3, 0.7, size=(n, 2, NUM_SINES))
    omega = rng.uniform(0.2, 0.8, size=(n, 2, NUM_SINES))
    phase = rng.uniform(0.0, 2 * np.pi, size=(n, 2, NUM_SINES))
    return np.stack([amp, omega, phase], axis=-1)


def reference(params: np.ndarray, t: np.ndarray | float) -> tuple[np.ndarray, ...]:
    """p_ref, v_ref, a_ref at time(s) ``t`` (s): each (n, 2), or (n, m, 2) for t of shape (m,)."""
    amp, omega, phase = params[..., 0], params[..., 1], params[..., 2]  # (n, 2, S)
    t = np.asarray(t, dtype=np.float64)
    if t.ndim == 0:
        arg = omega * t + phase  # (n, 2, S)
        s, c = np.sin(arg), np.cos(arg)
        return (
            (amp * s).sum(-1),
            (amp * omega * c).sum(-1),
            (-amp * omega**2 * s).sum(-1),
        )
    arg = omega[:, None] * t[None, :, None, None] + phase[:, None]  # (n, m, 2, S)
    s, c = np.sin(arg), np.cos(arg)
    a, w = amp[:, None], omega[:, None]
    return (a * s).sum(-1), (a * w * c).sum(-1), (-a * w**2 * s).sum(-1)


def observe(cfg: PointMassConfig, params: np.ndarray, step: int, p: np.ndarray,
            v: np.ndarray) -> np.ndarray:
    """Observation (n, 30): position, velocity, 13 reference waypoints relative to p."""
    offsets = (np.arange(NUM_WAYPOINTS) * cfg.waypoint_stride + step) * cfg.dt
    p_ref, _, _ = reference(params, offsets)  # (n, 13, 2)
    rel = (p_ref - p[:, None, :]).reshape(p.shape[0], -1)
    return np.concatenate([p, v, rel], axis=1).astype(np.float32)


def dynamics_step(cfg: PointMassConfig, p: np.ndarray, v: np.ndarray,
                  action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Semi-implicit Euler step with the action clipped to [-max_accel, max_accel]."""
    a = np.clip(action, -cfg.max_accel, cfg.max_accel)
    v = v + cfg.dt * a
    return p + cfg.dt * v, v


def apply_pushes(cfg: PointMassConfig, rng: np.random.Generator,
                 v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Random velocity impulses (probability push_prob per step); returns (v, pushed mask)."""
    n = v.shape[0]
    pushed = rng.random(n) < cfg.push_prob
    angle = rng.uniform(0.0, 2 * np.pi, size=n)
    kick = cfg.push_speed * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    return v + pushed[:, None] * kick, pushed


class OUExpert:
    """PD + feed-forward tracker with Ornstein-Uhlenbeck action noise (module docstring)."""

    def __init__(self, cfg: PointMassConfig, rng: np.random.Generator, n: int) -> None:
        self.cfg, self.rng = cfg, rng
        self.rho = float(np.exp(-cfg.dt / cfg.noise_tau))
        self.noise = cfg.noise_std * rng.standard_normal((n, 2))  # stationary start

    def clean_action(self, params: np.ndarray, step: int, p: np.ndarray,
                     v: np.ndarray) -> np.ndarray:
        p_ref, v_ref, a_ref = reference(params, step * self.cfg.dt)
        return a_ref + self.cfg.kp * (p_ref - p) + self.cfg.kd * (v_ref - v)

    def act(self, params: np.ndarray, step: int, p: np.ndarray, v: np.ndarray) -> np.ndarray:
        a = self.clean_action(params, step, p, v) + self.noise
        scale = self.cfg.noise_std * np.sqrt(1.0 - self.rho**2)
        self.noise = self.rho * self.noise + scale * self.rng.standard_normal(self.noise.shape)
        return np.clip(a, -self.cfg.max_accel, self.cfg.max_accel)


@dataclass
class PointMassDataset:
    """Demonstrations: observations (N, T, 30), actions (N, T, 2), tracking errors (N, T)."""

    observations: np.ndarray
    actions: np.ndarray
    errors: np.ndarray


def generate_point_mass_dataset(cfg: PointMassConfig, num_episodes: int,
                                seed: int) -> PointMassDataset:
    """Roll out the noisy expert on ``num_episodes`` fresh paths (deterministic given ``seed``)."""
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    rng = np.random.default_rng(seed)
    params = sample_paths(rng, num_episodes)
    p, v, _ = reference(params, 0.0)
    expert = OUExpert(cfg, rng, num_episodes)
    obs = np.zeros((num_episodes, cfg.horizon, cfg.obs_dim), np.float32)
    act = np.zeros((num_episodes, cfg.horizon, 2), np.float32)
    err = np.zeros((num_episodes, cfg.horizon), np.float32)
    for t in range(cfg.horizon):
        obs[:, t] = observe(cfg, params, t, p, v)
        a = expert.act(params, t, p, v)
        act[:, t] = a
        p, v = dynamics_step(cfg, p, v, a)
        v, _ = apply_pushes(cfg, rng, v)
        p_ref, _, _ = reference(params, (t + 1) * cfg.dt)
        err[:, t] = np.linalg.norm(p - p_ref, axis=1)
    return PointMassDataset(obs, act, err)


class PointMassTrackingEnv(gym.Env):
    """Gymnasium wrapper of the task for one episode (batch 1 of the functions above).

    reward_t = -|p_{t+1} - p_ref(t+1)|; truncated at the horizon; ``info`` holds
    ``tracking_error`` and ``pushed``. ``render()`` returns an (H, W, 3) uint8 array.
    ``step`` validates the action and the call order (:mod:`...envs.validation`): a finite
    float array of shape (2,) inside [-max_accel, max_accel]^2, after ``reset()`` and before the
    end of the episode.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(self, config: PointMassConfig | None = None, render_mode: str | None = None,
                 **overrides: float) -> None:
        base = config or PointMassConfig()
        self.cfg = PointMassConfig(**{**base.__dict__, **overrides}) if overrides else base
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-np.inf, np.inf, (self.cfg.obs_dim,), np.float32)
        high = np.full(2, self.cfg.max_accel, np.float32)
        self.action_space = spaces.Box(-high, high, dtype=np.float32)
        self._params = np.zeros((1, 2, NUM_SINES, 3))
        self._p = np.zeros((1, 2))
        self._v = np.zeros((1, 2))
        self._t = 0
        self._trail: list[np.ndarray] = []
        self._order = EpisodeOrder("PointMassTrackingEnv")

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._params = sample_paths(self.np_random, 1)
        self._p, self._v, _ = reference(self._params, 0.0)
        self._t = 0
        self._trail = [self._p[0].copy()]
        self._order.started()
        return observe(self.cfg, self._params, 0, self._p, self._v)[0], {"tracking_error": 0.0}

    def expert(self, rng: np.random.Generator | None = None) -> OUExpert:
        """A scripted expert for this environment (noise drawn from ``rng`` or the env's RNG)."""
        return OUExpert(self.cfg, rng if rng is not None else self.np_random, 1)

    @property
    def state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(path parameters, p, v, step) for scripted experts."""
        return self._params, self._p, self._v, self._t

    def step(self, action):
        self._order.check()
        a = box_action(action, self.action_space).reshape(1, 2)
        self._p, self._v = dynamics_step(self.cfg, self._p, self._v, a)
        self._v, pushed = apply_pushes(self.cfg, self.np_random, self._v)
        self._t += 1
        p_ref, _, _ = reference(self._params, self._t * self.cfg.dt)
        err = float(np.linalg.norm(self._p - p_ref))
        self._trail.append(self._p[0].copy())
        obs = observe(self.cfg, self._params, self._t, self._p, self._v)[0]
        truncated = self._t >= self.cfg.horizon
        self._order.stepped(False, truncated)
        return obs, -err, False, truncated, {"tracking_error": err, "pushed": bool(pushed[0])}

    def reference_path(self) -> np.ndarray:
        """The whole reference path, (horizon + 1, 2)."""
        p_ref, _, _ = reference(self._params, np.arange(self.cfg.horizon + 1) * self.cfg.dt)
        return p_ref[0]

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        from transformer_math.robotics.envs.drawing import Canvas

        canvas = Canvas(128, 128, (-2.5, 2.5), (-2.5, 2.5))
        canvas.polyline(self.reference_path(), (150, 150, 150))
        canvas.polyline(np.array(self._trail), (30, 90, 200))
        canvas.disc(self._p[0], 0.08, (200, 40, 40))
        return canvas.image
