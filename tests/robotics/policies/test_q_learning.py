"""Offline tabular Q-learning stitches the gridworld halves."""

from __future__ import annotations

import numpy as np
import pytest

from transformer_math.robotics.envs.gridworld import (
    CELLS,
    NUM_ACTIONS,
    NUM_STATES,
    generate_stitch_dataset,
    state_index,
    transition,
)
from transformer_math.robotics.policies.q_learning import TabularQLearning


def test_offline_q_learning_stitches_halves():
    data = generate_stitch_dataset(5, 0)
    q = TabularQLearning(NUM_STATES, NUM_ACTIONS, gamma=0.95)
    q.fit((int(s), int(a), float(r), int(s2), bool(d)) for ep in data
          for s, a, r, s2, d in zip(ep.states, ep.actions, ep.rewards, ep.next_states, ep.dones,
                                    strict=True))
    xy, visited, total = CELLS["A"], False, 0.0
    for _ in range(14):
        xy, visited, r, done = transition(xy, visited, q.select_action(state_index(xy, visited)))
        total += r
        if done:
            break
    assert xy == CELLS["C"] and total == 4.0
    assert q.value(state_index(CELLS["A"], False)) == pytest.approx(
        2 * 0.95**5 + 2 * 0.95**8)
    assert np.isinf(q.q).any()  # unseen actions are never bootstrapped
