"""PushT and ALOHA as LeRobot evaluates them: environments, observation keys, success metrics.

Environments (the optional extra ``[sim]``: ``pip install 'transformer-math[sim]'``):
- ``pusht``: ``gym_pusht/PushT-v0`` (Chi et al., Diffusion Policy, RSS 2023), 300 steps at 10 fps
  (LeRobot's ``PushtEnv`` episode length). Success: the T block's coverage of the goal region
  exceeds 0.95 at some step (gym-pusht's ``success_threshold``; the episode terminates there);
  the metric reported beside it is the episode's maximum coverage.
- ``aloha-insertion`` / ``aloha-transfer-cube``: ``gym_aloha/AlohaInsertion-v0`` /
  ``AlohaTransferCube-v0`` (Zhao et al., ACT, RSS 2023), 400 steps at 50 fps (LeRobot's
  ``AlohaEnv`` episode length; gym-aloha registers 300). Success: the episode's maximum reward
  equals the task's maximum 4 (transfer-cube: the left gripper holds the cube off the table;
  insertion: the peg touches the socket's pin); gym-aloha terminates there.

Observations follow LeRobot's ``envs/utils.py::preprocess_observation``: ``pixels`` (one
camera) becomes ``observation.image``, a dict of cameras ``observation.images.<camera>``, each
an HWC uint8 frame turned into a (1, C, H, W) float32 tensor in [0, 1] (x / 255);
``agent_pos`` becomes ``observation.state`` and ``environment_state`` (PushT's 16 keypoint
coordinates) ``observation.environment_state``, both float32 with a batch axis.

ALOHA is built on gym-aloha's own ``AlohaEnv`` (its MJCF, physics, reset and seeding, reward
and termination) with one change, :class:`LeanAlohaEnv`: the task's observation renders only
what the observation type needs (the ``top`` camera at 480 x 640 for ``pixels_agent_pos``,
nothing for ``environment_state_agent_pos``) instead of three 480 x 640 cameras every step
(0.24 s a step on one core), and ``environment_state_agent_pos`` exposes the task's
``env_state`` (transfer-cube: the cube's pose, 7 numbers; insertion: peg and socket, 14),
which gym-aloha computes but does not return. MuJoCo renders headless with ``MUJOCO_GL=egl``
(set when unset; ``osmesa`` needs PyOpenGL's OSMesa library, ``glfw`` a display).

Project policies: the project's ACT reads ``observation.state`` and ``observation.images.<c>``.
:func:`policy_batch` hands it LeRobot's batch, with two adaptations stated here: a policy with
one camera receives ``observation.image`` under its camera's key, and a state-only policy whose
``state_dim`` is ``|agent_pos| + |environment_state|`` receives the two concatenated (the
project's ACT has no separate environment-state token; LeRobot's ACT has one).

The success rate over ``n`` episodes comes with the 95 % Wilson score interval (Wilson 1927;
:func:`transformer_math.robotics.vla_training.wilson_interval`).
"""

from __future__ import annotations

import collections
import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from transformer_math.robotics.vla_training import wilson_interval

OBS_TYPES = ("pixels_agent_pos", "environment_state_agent_pos")
STATE_KEY, ENV_STATE_KEY = "observation.state", "observation.environment_state"
IMAGE_KEY, IMAGES_PREFIX = "observation.image", "observation.images."
PUSHT_SUCCESS_COVERAGE = 0.95
ALOHA_MAX_REWARD = 4


@dataclass(frozen=True)
class SimSpec:
    """One benchmark: its package, gymnasium id, LeRobot's episode length and fps."""

    name: str
    package: str
    gym_id: str
    episode_length: int
    fps: int
    aloha_task: str | None = None  # gym-aloha's task name
    task_text: str = ""


SIMS: dict[str, SimSpec] = {
    "pusht": SimSpec("pusht", "gym_pusht", "gym_pusht/PushT-v0", 300, 10,
                     task_text="Push the T-shaped block onto the T-shaped target."),
    "aloha-insertion": SimSpec("aloha-insertion", "gym_aloha", "gym_aloha/AlohaInsertion-v0",
                               400, 50, "insertion", "Insert the peg into the socket."),
    "aloha-transfer-cube": SimSpec("aloha-transfer-cube", "gym_aloha",
                                   "gym_aloha/AlohaTransferCube-v0", 400, 50, "transfer_cube",
                                   "Pick up the cube with the right arm and transfer it to "
                                   "the left arm."),
}
SIM_NAMES = tuple(SIMS)


class SimUnavailableError(ImportError):
    """The benchmark's package is not installed (the ``[sim]`` extra)."""


def spec(name: str) -> SimSpec:
    """The :class:`SimSpec` of ``name`` (one of :data:`SIM_NAMES`)."""
    if name not in SIMS:
        raise ValueError(f"name must be one of {', '.join(SIM_NAMES)}, got {name!r}")
    return SIMS[name]


def require(name: str) -> SimSpec:
    """Import the benchmark's package (registering its environments) or raise
    :class:`SimUnavailableError` naming it and the extra that installs it."""
    s = spec(name)
    if s.package == "gym_aloha":
        os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        importlib.import_module(s.package)
    except ImportError as exc:
        raise SimUnavailableError(
            f"{name} needs the package {s.package.replace('_', '-')} ({exc}); install it with "
            f"pip install 'transformer-math[sim]'") from exc
    return s


def available(name: str) -> bool:
    """Whether ``name``'s package imports."""
    try:
        require(name)
    except SimUnavailableError:
        return False
    return True


def _lean_task_class(base: type, render_top: tuple[int, int] | None) -> type:
    """gym-aloha's task ``base`` with an observation that renders only the ``top`` camera at
    ``render_top`` = (height, width), or nothing (module docstring)."""

    class Lean(base):  # type: ignore[misc, valid-type]
        def get_observation(self, physics: Any) -> collections.OrderedDict:
            obs = collections.OrderedDict()
            obs["qpos"] = self.get_qpos(physics)
            obs["qvel"] = self.get_qvel(physics)
            obs["env_state"] = self.get_env_state(physics)
            obs["images"] = {}
            if render_top is not None:
                obs["images"]["top"] = physics.render(height=render_top[0],
                                                      width=render_top[1], camera_id="top")
            return obs

    Lean.__name__ = f"Lean{base.__name__}"
    return Lean


def _lean_aloha_class() -> type:
    from gym_aloha.env import AlohaEnv
    from gymnasium import spaces

    class LeanAlohaEnv(AlohaEnv):
        """gym-aloha's ``AlohaEnv`` whose task renders only what ``obs_type`` needs and whose
        ``environment_state_agent_pos`` returns the task's ``env_state`` (module docstring)."""

        def __init__(self, task: str, obs_type: str = "pixels_agent_pos") -> None:
            if obs_type not in OBS_TYPES:
                raise ValueError(f"obs_type must be one of {OBS_TYPES}, got {obs_type!r}")
            wanted = obs_type
            super().__init__(task=task, obs_type="pixels_agent_pos")
            self.obs_type = wanted
            size = (self.observation_height, self.observation_width)
            base = type(self._env.task)
            self._env._task = _lean_task_class(base, size if wanted == OBS_TYPES[0] else None)()
            if wanted == OBS_TYPES[1]:
                n = len(self._env.task.get_env_state(self._env.physics))
                self.observation_space = spaces.Dict({
                    "agent_pos": self.observation_space["agent_pos"],
                    "environment_state": spaces.Box(-1000.0, 1000.0, (n,), np.float64)})

        def _format_raw_obs(self, raw_obs: Mapping[str, Any]) -> dict[str, Any]:
            if self.obs_type == OBS_TYPES[1]:
                return {"agent_pos": raw_obs["qpos"],
                        "environment_state": np.asarray(raw_obs["env_state"], np.float64)}
            return super()._format_raw_obs(raw_obs)

    return LeanAlohaEnv


def make_env(name: str, obs_type: str = "pixels_agent_pos") -> Any:
    """The gymnasium environment of benchmark ``name`` with LeRobot's episode length.

    ``obs_type``: ``pixels_agent_pos`` (PushT: a 96 x 96 image; ALOHA: the 480 x 640 ``top``
    camera) or ``environment_state_agent_pos`` (PushT's keypoints; ALOHA's object poses)."""
    import gymnasium as gym

    s = require(name)
    if obs_type not in OBS_TYPES:
        raise ValueError(f"obs_type must be one of {OBS_TYPES}, got {obs_type!r}")
    if s.aloha_task is None:
        return gym.make(s.gym_id, obs_type=obs_type, render_mode="rgb_array",
                        max_episode_steps=s.episode_length)
    env = _lean_aloha_class()(s.aloha_task, obs_type=obs_type)
    return gym.wrappers.TimeLimit(env, max_episode_steps=s.episode_length)


def lerobot_observation(obs: Mapping[str, Any]) -> dict[str, Tensor]:
    """LeRobot's batch (batch axis 1) of one gym observation (module docstring)."""
    out: dict[str, Tensor] = {}
    if "pixels" in obs:
        pixels = obs["pixels"]
        images = ({IMAGES_PREFIX + k: v for k, v in pixels.items()}
                  if isinstance(pixels, Mapping) else {IMAGE_KEY: pixels})
        for key, img in images.items():
            img = np.asarray(img)
            if img.dtype != np.uint8 or img.ndim != 3 or img.shape[-1] not in (1, 3, 4):
                raise ValueError(f"{key}: expected an HWC uint8 image, got {img.dtype} "
                                 f"{img.shape}")
            t = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1)
            out[key] = (t.to(torch.float32) / 255.0).unsqueeze(0)
    if "agent_pos" in obs:
        out[STATE_KEY] = torch.as_tensor(np.asarray(obs["agent_pos"]), dtype=torch.float32
                                         ).unsqueeze(0)
    if "environment_state" in obs:
        out[ENV_STATE_KEY] = torch.as_tensor(np.asarray(obs["environment_state"]),
                                             dtype=torch.float32).unsqueeze(0)
    return out


def policy_batch(batch: Mapping[str, Tensor], policy: Any) -> dict[str, Tensor]:
    """LeRobot's ``batch`` as the project's ACT reads it (module docstring's two adaptations);
    a clear error when the policy's state size or cameras do not fit."""
    config = policy.config
    state = batch.get(STATE_KEY)
    if state is None:
        raise ValueError("the observation has no agent_pos (observation.state)")
    want = int(config.state_dim)
    env_state = batch.get(ENV_STATE_KEY)
    if want != state.shape[-1]:
        if env_state is not None and want == state.shape[-1] + env_state.shape[-1]:
            state = torch.cat([state, env_state], dim=-1)
        else:
            have = f"{state.shape[-1]}" + (f" (+ {env_state.shape[-1]} environment_state)"
                                           if env_state is not None else "")
            raise ValueError(f"the policy's state_dim is {want}, the environment's state has "
                             f"{have}")
    out = {STATE_KEY: state}
    cameras = tuple(getattr(config, "camera_names", ()))
    for cam in cameras:
        key = IMAGES_PREFIX + cam
        img = batch.get(key)
        if img is None and len(cameras) == 1:
            img = batch.get(IMAGE_KEY)
        if img is None:
            raise ValueError(f"the policy reads camera {cam!r}; the environment gives "
                             f"{sorted(k for k in batch if k.startswith('observation.image'))}"
                             " (use obs_type pixels_agent_pos)")
        out[key] = img
    return out


@dataclass
class SimResult:
    """Episodes of one benchmark: successes, the Wilson interval and each episode's metric
    (PushT: maximum coverage; ALOHA: maximum reward)."""

    env: str
    successes: int
    episodes: int
    metric_name: str
    metrics: list[float] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.successes / self.episodes

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.episodes)

    def as_dict(self) -> dict[str, Any]:
        lo, hi = self.interval
        return {"env": self.env, "episodes": self.episodes, "successes": self.successes,
                "success_rate": round(self.rate, 4), "wilson95": [round(lo, 4), round(hi, 4)],
                self.metric_name: [round(float(m), 4) for m in self.metrics],
                "steps": list(self.steps)}


Actor = Callable[[Mapping[str, Tensor], int], np.ndarray]
"""``act(lerobot_batch, t) -> action`` for one episode."""


def _frame(env: Any, name: str) -> np.ndarray:
    """A small RGB frame of the current state for the strip."""
    u = env.unwrapped
    if name == "pusht":
        from PIL import Image

        return np.asarray(Image.fromarray(u.render()).resize((136, 136)))
    return np.asarray(u._env.physics.render(height=120, width=160, camera_id="top"))


def run_episodes(name: str, make_actor: Callable[[int], Actor], *, episodes: int, seed: int,
                 obs_type: str = "pixels_agent_pos", frames: list | None = None,
                 frame_every: int | None = None, max_steps: int | None = None) -> SimResult:
    """Run ``episodes`` episodes (reset seeds ``seed`` .. ``seed + episodes - 1``), each with
    ``make_actor(episode_seed)``; actions are clipped to the action space (gymnasium's
    ``ClipAction``). ``frames``: filled with (step, RGB frame) of episode 0 every
    ``frame_every`` steps (default: episode length / 16). ``max_steps`` cuts episodes shorter
    than the benchmark's length (a short check; the success metric covers the steps run)."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    s = spec(name)
    env = make_env(name, obs_type)
    box = env.action_space
    every = frame_every or max(1, s.episode_length // 16)
    is_pusht = s.aloha_task is None
    result = SimResult(name, 0, episodes, "max_coverage" if is_pusht else "max_reward")
    try:
        for i in range(episodes):
            obs, _ = env.reset(seed=seed + i)
            act = make_actor(seed + i)
            best, success, t = 0.0, False, 0
            if frames is not None and i == 0:
                frames.append((0, _frame(env, name)))
            while True:
                action = np.asarray(act(lerobot_observation(obs), t), dtype=np.float32)
                action = np.clip(action, box.low, box.high)
                obs, reward, terminated, truncated, info = env.step(action)
                t += 1
                if is_pusht:
                    best = max(best, float(info["coverage"]))
                    success = success or best > PUSHT_SUCCESS_COVERAGE
                else:
                    best = max(best, float(reward))
                    success = success or best == ALOHA_MAX_REWARD
                last = terminated or truncated or (max_steps is not None and t >= max_steps)
                if frames is not None and i == 0 and (t % every == 0 or last):
                    frames.append((t, _frame(env, name)))
                if terminated or truncated or (max_steps is not None and t >= max_steps):
                    break
            result.successes += int(success)
            result.metrics.append(best)
            result.steps.append(t)
    finally:
        env.close()
    return result


def policy_actor(policy: Any) -> Callable[[int], Actor]:
    """``make_actor`` for a project policy: ``reset()`` per episode, then ``select_action`` on
    :func:`policy_batch` of LeRobot's batch."""

    def make(_seed: int) -> Actor:
        policy.reset()

        def act(batch: Mapping[str, Tensor], t: int) -> np.ndarray:
            with torch.no_grad():
                out = policy.select_action(policy_batch(batch, policy))[0]
            return out.detach().cpu().numpy()

        return act

    return make
