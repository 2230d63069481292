"""VLAPush (issue 32 item 4): gymnasium contract, determinism, expert success, held-out split."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from transformer_math.robotics.envs import ENV_SPECS, VISION_ENV_IDS
from transformer_math.robotics.envs.vla_push import (
    HELD_OUT,
    VLAPushConfig,
    generate_vla_push_dataset,
    name_of,
    relabel_scene,
    sample_scene,
)

ENV_ID = VISION_ENV_IDS["vla-push"]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_env_checker_render_and_registration():
    env = gym.make(ENV_ID, render_mode="rgb_array")
    assert env.spec.max_episode_steps == ENV_SPECS[ENV_ID][1] == VLAPushConfig().horizon
    check_env(env.unwrapped, skip_render_check=False)
    obs, info = env.reset(seed=1)
    assert obs["pixels"].shape == (32, 32, 3) and obs["pixels"].dtype == np.uint8
    assert env.observation_space.contains(obs) and isinstance(info["task"], str)
    assert np.array_equal(env.render(), obs["pixels"])


def test_same_seed_same_episode_and_expert_succeeds():
    def episode(seed):
        env = gym.make(ENV_ID).unwrapped
        obs, info = env.reset(seed=seed)
        frames, done = [obs["pixels"]], False
        for _ in range(env.cfg.horizon):
            obs, _reward, done, truncated, info = env.step(env.expert_action())
            frames.append(obs["pixels"])
            if done or truncated:
                break
        return info["task"], frames, done

    (t1, f1, d1), (t2, f2, _d2) = episode(5), episode(5)
    assert t1 == t2 and all(np.array_equal(a, b) for a, b in zip(f1, f2, strict=True))
    assert d1 and all(episode(s)[2] for s in range(10))


def test_refused_actions_and_order():
    env = gym.make(ENV_ID).unwrapped
    with pytest.raises(RuntimeError, match=r"reset\(\)"):
        env.step(np.zeros(3, np.float32))
    env.reset(seed=0)
    for bad in (np.zeros(2), np.array([2.0, 0, 0]), np.array([np.nan, 0, 0])):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)
    with pytest.raises(ValueError, match="split"):
        VLAPushConfig(split="test")


def test_held_out_pairs_are_never_named_in_training_and_are_the_held_out_sources():
    cfg = VLAPushConfig()
    train = generate_vla_push_dataset(cfg, 60, seed=0, split="train")
    held = generate_vla_push_dataset(cfg, 20, seed=0, split="held_out")
    names = [name_of(p) for p in HELD_OUT]
    assert not any(n in task for task in train.tasks for n in names)
    assert all(any(task.split(" to the ")[0].endswith(n) or f"the {n} " in task for n in names)
               for task in held.tasks)
    assert (train.lengths < cfg.horizon).all() and (held.lengths < cfg.horizon).all()
    assert train.images.shape == (60, cfg.horizon, 32, 32, 3)


def test_instructions_per_scene_pairs_one_layout_with_different_instructions():
    """Counterfactual groups: the same first frame, another (source, target) each episode,
    and the held-out pairs still never named in training."""
    cfg = VLAPushConfig()
    data = generate_vla_push_dataset(cfg, 30, seed=0, instructions_per_scene=3)
    names = [name_of(p) for p in HELD_OUT]
    assert not any(n in task for task in data.tasks for n in names)
    groups = [data.tasks[i:i + 3] for i in range(0, 30, 3)]
    for g, tasks in enumerate(groups):
        first = data.images[3 * g, 0]
        assert all(np.array_equal(first, data.images[3 * g + j, 0]) for j in (1, 2))
        pairs = {t.split(" the ", 1)[1].replace(" next to", " to").replace(" over to", " to")
                 for t in tasks}
        assert len(pairs) >= 2  # the words differ within a group (a layout of 3 allows 6 pairs)
    assert (data.lengths < cfg.horizon).all()  # the expert still succeeds on every relabel
    single = generate_vla_push_dataset(cfg, 4, seed=0)
    assert np.array_equal(single.images[0], generate_vla_push_dataset(cfg, 4, seed=0).images[0])
    for bad in (0, 31, 2.0, True):
        with pytest.raises(ValueError, match="instructions_per_scene"):
            generate_vla_push_dataset(cfg, 4, seed=0, instructions_per_scene=bad)


def test_relabel_scene_keeps_the_split_rules():
    rng = np.random.default_rng(0)
    cfg = VLAPushConfig()
    for split in ("train", "held_out"):
        for _ in range(20):
            scene, _ = sample_scene(cfg, rng, split)
            new = relabel_scene(scene, rng, split)
            assert new.positions is scene.positions and new.pairs == scene.pairs
            assert new.source != new.target
            assert (new.pairs[new.source] in HELD_OUT) == (split == "held_out")
            assert new.pairs[new.target] not in HELD_OUT
            assert name_of(new.pairs[new.source]) in new.task
    with pytest.raises(ValueError, match="split"):
        relabel_scene(scene, rng, "test")


def test_carrying_the_target_to_the_source_is_not_success():
    """Success is not symmetric: the named object must be the one that moved."""
    import numpy as np

    from transformer_math.robotics.envs.vla_push import VLAPushConfig, VLAPushEnv, succeeded

    env = VLAPushEnv(VLAPushConfig())
    env.reset(seed=3)
    scene = env.scene
    assert scene is not None
    src, tgt = scene.positions[scene.source], scene.positions[scene.target]
    moved_source = scene.positions.copy()
    moved_source[scene.source] = tgt + 0.05
    moved_target = scene.positions.copy()
    moved_target[scene.target] = src + 0.05
    assert succeeded(env.cfg, scene, moved_source, None)
    assert not succeeded(env.cfg, scene, moved_target, None)
    assert not succeeded(env.cfg, scene, moved_source, scene.source)  # still held
    assert np.array_equal(scene.positions[scene.target], tgt)
