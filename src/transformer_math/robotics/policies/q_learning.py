"""Tabular offline Q-learning on a fixed dataset of transitions (batch-constrained).

Bellman optimality backup (Watkins 1989; 000 §8.3.8 "Q-learning 靠 Bellman 最优性方程"),
iterated over the dataset until convergence:
    Q(s, a) <- r + gamma * (1 - done) * max_{a' in D(s')} Q(s', a'),
where D(s') holds the actions seen at s' in the data (offline: unseen actions are never
bootstrapped from; their Q stays -inf). The greedy policy picks argmax over seen actions. The max
over the data's continuations is what stitches A->B with B->C.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


class TabularQLearning:
    def __init__(self, num_states: int, num_actions: int, *, gamma: float = 0.95) -> None:
        if num_states < 1 or num_actions < 1:
            raise ValueError(
                f"num_states and num_actions must be >= 1, got {num_states}, {num_actions}"
            )
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.num_states, self.num_actions, self.gamma = num_states, num_actions, gamma
        self.q = np.full((num_states, num_actions), -np.inf)

    def fit(self, transitions: Iterable[tuple[int, int, float, int, bool]],
            max_sweeps: int = 200, tol: float = 1e-9) -> int:
        """Sweep the backups until the largest change is below ``tol``; returns the sweep count."""
        data = list(transitions)
        if not data:
            raise ValueError("transitions must not be empty")
        seen = np.zeros_like(self.q, dtype=bool)
        for s, a, _, _, _ in data:
            seen[s, a] = True
        self.q = np.where(seen, 0.0, -np.inf)
        for sweep in range(1, max_sweeps + 1):
            delta = 0.0
            for s, a, r, s2, done in data:
                nxt = 0.0 if done or not seen[s2].any() else self.q[s2][seen[s2]].max()
                new = r + self.gamma * nxt
                delta = max(delta, abs(new - self.q[s, a]))
                self.q[s, a] = new
            if delta < tol:
                return sweep
        return max_sweeps

    def value(self, state: int) -> float:
        row = self.q[state]
        return float(row.max()) if np.isfinite(row).any() else float("nan")

    def select_action(self, state: int) -> int:
        """Greedy over actions seen at ``state`` (0, "stay", where the data never visited)."""
        row = self.q[state]
        return int(row.argmax()) if np.isfinite(row).any() else 0
