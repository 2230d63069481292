"""Environment API conformance (gymnasium's checker), determinism and dataset generators."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from transformer_math.robotics.envs import ENV_IDS
from transformer_math.robotics.envs.bimodal import BimodalConfig, generate_bimodal_dataset
from transformer_math.robotics.envs.gridworld import (
    CELLS,
    REWARD_B,
    REWARD_C,
    REWARD_D,
    generate_stitch_dataset,
    scripted_episode,
)
from transformer_math.robotics.envs.point_mass import PointMassConfig, generate_point_mass_dataset
from transformer_math.robotics.envs.runner import RunnerConfig, generate_runner_dataset


@pytest.mark.parametrize("name", sorted(ENV_IDS))
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_env_checker_and_render(name):
    env = gym.make(ENV_IDS[name], render_mode="rgb_array")
    check_env(env.unwrapped, skip_render_check=False)
    env.reset(seed=1)
    img = env.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3


@pytest.mark.parametrize("name", sorted(ENV_IDS))
def test_same_seed_same_episode(name):
    def episode(seed):
        env = gym.make(ENV_IDS[name])
        env.action_space.seed(123)
        obs, _ = env.reset(seed=seed)
        out = [obs]
        for _ in range(15):
            obs, r, term, trunc, _ = env.step(env.action_space.sample())
            out.append(np.append(obs, r))
            if term or trunc:
                break
        return out

    a, b, c = episode(5), episode(5), episode(6)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    if name in ("point-mass", "bimodal"):  # random paths / start positions
        assert not np.array_equal(a[0], c[0])


def test_point_mass_pushes_change_dynamics_and_data_is_deterministic():
    cfg = PointMassConfig(horizon=30)
    d1, d2 = generate_point_mass_dataset(cfg, 3, 0), generate_point_mass_dataset(cfg, 3, 0)
    assert np.array_equal(d1.actions, d2.actions)
    pushed = generate_point_mass_dataset(PointMassConfig(horizon=30, push_prob=1.0), 3, 0)
    assert not np.allclose(pushed.errors, d1.errors)
    assert d1.observations.shape == (3, 30, cfg.obs_dim)


def test_point_mass_config_rejects_bad_values():
    with pytest.raises(ValueError, match="push_prob"):
        PointMassConfig(push_prob=2.0)


def test_bimodal_expert_uses_both_sides_and_avoids_obstacle():
    data = generate_bimodal_dataset(BimodalConfig(), 40, 0)
    assert 0.2 < (data.side < 0).mean() < 0.8
    dist = np.linalg.norm(data.observations - np.array([0.0, 1.0]), axis=-1)
    assert dist.min() > BimodalConfig().obstacle_radius
    assert np.linalg.norm(data.observations[:, -1] - np.array([0.0, 2.0]), axis=-1).max() < 0.1


def test_gridworld_segments_and_returns():
    rng = np.random.default_rng(0)
    ab, bc, ad = (scripted_episode(rng, s) for s in ("A->B", "B->C", "A->D"))
    assert ab.rewards.sum() == REWARD_B and not ab.dones.any()
    assert bc.rewards.sum() == REWARD_C and bc.dones[-1]
    assert ad.rewards.sum() == REWARD_D and ad.dones[-1]
    full = scripted_episode(rng, "A->B->C")
    assert full.rewards.sum() == REWARD_B + REWARD_C
    data = generate_stitch_dataset(5, 0)
    assert {e.segment for e in data} == {"A->B", "B->C", "A->D"}
    with pytest.raises(ValueError, match="segment"):
        scripted_episode(rng, "A->Z")
    assert CELLS["A"] == (0, 3)


def test_runner_returns_stay_inside_the_behaviour_range():
    data = generate_runner_dataset(RunnerConfig(), 200, 0)
    returns = data.rewards.sum(1)
    assert returns.max() < 0.4 * RunnerConfig().horizon
    assert returns.min() > -0.4 * RunnerConfig().horizon
