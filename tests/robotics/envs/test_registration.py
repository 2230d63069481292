"""gymnasium registration (issue 16, item 3): entry point, fresh interpreters, episode limits.

gymnasium 0.26-0.29 load the ``gymnasium.envs`` entry points when gymnasium is imported
(``load_env_plugins``: each entry point is loaded and called inside ``namespace(name)``);
gymnasium 1.x dropped that hook and imports the module named in a ``"module:id"`` id instead.
Both paths are tested in a fresh interpreter that never imported transformer_math.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from transformer_math.robotics.envs import ENV_IDS, ENV_SPECS, register_envs
from transformer_math.robotics.envs.bimodal import BimodalConfig
from transformer_math.robotics.envs.gridworld import HORIZON
from transformer_math.robotics.envs.point_mass import PointMassConfig
from transformer_math.robotics.envs.runner import RunnerConfig

HORIZONS = {"point-mass": PointMassConfig().horizon, "bimodal": BimodalConfig().horizon,
            "grid": HORIZON, "runner": RunnerConfig().horizon}
BOUNDED = ("bimodal", "grid", "runner")  # point-mass: position and velocity are unbounded

_PLUGIN_LOADER = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("error")  # a namespace warning from register() would fail here
    from importlib.metadata import entry_points
    import gymnasium as gym
    from gymnasium.envs.registration import namespace
    assert not any(m.startswith("transformer_math") for m in sys.modules)
    plugins = [p for p in entry_points(group="gymnasium.envs") if p.name == "TransformerMath"]
    assert len(plugins) == 1, plugins
    for plugin in plugins:  # what gymnasium 0.29's load_env_plugins does for each entry point
        with namespace(plugin.name):
            plugin.load()()
    assert "torch" not in sys.modules  # registering imports no model code
    for env_id in sys.argv[1:]:
        env = gym.make(env_id)
        env.reset(seed=0)
        print(env_id, env.spec.max_episode_steps)
""")

_MODULE_ID = textwrap.dedent("""
    import sys
    import gymnasium as gym
    assert not any(m.startswith("transformer_math") for m in sys.modules)
    env = gym.make("transformer_math.robotics.envs:" + sys.argv[1])
    env.reset(seed=0)
    print(env.spec.id, env.spec.max_episode_steps)
""")


def test_entry_point_registers_every_env_in_a_fresh_interpreter():
    ids = sorted(ENV_IDS.values())
    res = subprocess.run([sys.executable, "-c", _PLUGIN_LOADER, *ids], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    got = dict(line.split() for line in res.stdout.strip().splitlines())
    assert got == {ENV_IDS[n]: str(h) for n, h in HORIZONS.items()}


def test_module_qualified_id_works_in_a_fresh_interpreter():
    """gymnasium 1.x: ``gymnasium.make("transformer_math.robotics.envs:TransformerMath/...")``."""
    res = subprocess.run([sys.executable, "-c", _MODULE_ID, ENV_IDS["point-mass"]],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split() == [ENV_IDS["point-mass"], str(HORIZONS["point-mass"])]


def test_registration_is_idempotent_and_static_table_matches_the_envs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        register_envs()  # already registered on import: no-op, no warning
    for name, env_id in ENV_IDS.items():
        entry, steps = ENV_SPECS[env_id]
        assert steps == HORIZONS[name]
        assert gym.spec(env_id).max_episode_steps == steps
        assert gym.spec(env_id).entry_point == entry


@pytest.mark.parametrize("name", sorted(ENV_IDS))
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_episodes_end_at_the_horizon_with_finite_bounds_where_the_task_has_them(name):
    env = gym.make(ENV_IDS[name])
    check_env(env.unwrapped)
    space = env.observation_space
    assert bool(np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))) == (
        name in BOUNDED)
    env.action_space.seed(0)
    env.reset(seed=0)
    steps = 0
    for _ in range(HORIZONS[name]):
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        assert space.contains(obs)
        if terminated or truncated:
            break
    assert terminated or (truncated and steps == HORIZONS[name])
